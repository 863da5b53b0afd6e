"""A `kq dev` subprocess for tests, driven the way a user drives it: kubectl and `kq dev`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kq.sandbox.readyline import wait_for_kubeconfig
from tests.harness import REPO, wait_until

READY_TIMEOUT_S = 30.0
T = TypeVar("T")


@dataclass(frozen=True)
class Dev:
    """A running `kq dev`: its data directory and kubeconfig."""

    data_dir: Path
    kubeconfig: Path
    cache: Path

    def kubectl(self, *args: str, input: str | None = None) -> str:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBECACHEDIR": str(self.cache)}
        done = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True,
                              env=env, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def get(self, what: str, *args: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.kubectl("get", what, *args, "-o", "json"))
        return found

    def items(self, what: str, namespace: str) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.get(what, "-n", namespace)["items"]
        return listed

    def kq(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "kq", "dev", *args, "--data-dir",
                               str(self.data_dir)], capture_output=True, text=True, cwd=REPO,
                              timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout


@contextmanager
def running_dev(work: Path, *extra: str, profile: str = "s1", speed: float = 60) -> Iterator[Dev]:
    """`kq dev --no-controller` on ``profile`` with its state in ``work/data``."""
    data_dir = work / "data"
    log_path = work / "kq-dev.log"
    with log_path.open("a") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kq", "dev", "--no-controller", "--data-dir", str(data_dir),
             "--speed", str(speed), "--profile", profile, *extra],
            stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO,
        )  # fmt: skip
        try:
            kubeconfig = wait_for_kubeconfig(process, log_path, READY_TIMEOUT_S)
            yield Dev(data_dir, kubeconfig, work / "kubectl-cache")
        finally:
            process.terminate()
            try:
                assert process.wait(timeout=15) == 0  # SIGTERM is a clean stop
            finally:
                process.kill()
                if process.stdout is not None:
                    process.stdout.close()


def until(check: Callable[[], T | None], timeout: float = 30.0, what: str = "") -> T:
    """Poll ``check`` until it returns something truthy; that value."""
    return wait_until(check, what or repr(check), within=timeout)
