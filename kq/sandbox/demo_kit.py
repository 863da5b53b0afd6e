"""What every ``kq demo`` story shares: a ``kq dev`` sandbox driven with the real kubectl, and
small readers of the objects it shows."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kq.sandbox.readyline import NotReady, stop, wait_for_kubeconfig

REPO = Path(__file__).resolve().parents[2]
STEP_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 60.0


class DemoError(RuntimeError):
    """A step of the story did not happen in time; the message says which."""


Kubectl = Callable[..., str]


@dataclass(frozen=True)
class Session:
    """A running ``kq dev`` and the environment its kubectl and ``kq dev`` commands need."""

    data_dir: Path
    env: dict[str, str]

    def kubectl(self, *args: str, input: str | None = None) -> str:
        return self._run(["kubectl", *args], input)

    def kq(self, *args: str) -> str:
        """``kq ARGS --data-dir DIR`` on this sandbox, as a person would run it."""
        return self._run([sys.executable, "-m", "kq", *args, "--data-dir", str(self.data_dir)])

    def _run(self, argv: list[str], input: str | None = None) -> str:
        done = subprocess.run(argv, input=input, capture_output=True, text=True, env=self.env,
                              timeout=60, check=False)  # fmt: skip
        if done.returncode != 0:
            raise DemoError(f"{' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout


@contextmanager
def sandbox(workdir: Path, profile: str, speed: float) -> Iterator[Session]:
    """``kq dev --profile PROFILE`` in ``workdir`` until the block ends."""
    log = (workdir / "kq-dev.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "kq", "dev", "--data-dir", str(workdir / "dev"), "--fresh",
         "--profile", profile, "--speed", f"{speed:g}"],
        stdout=subprocess.PIPE, stderr=log, text=True,
    )  # fmt: skip
    try:
        kubeconfig = wait_for_kubeconfig(process, workdir / "kq-dev.log", READY_TIMEOUT_S)
        env = {**os.environ, "KUBECONFIG": str(kubeconfig),
               "KUBECACHEDIR": str(workdir / "kubectl-cache")}  # fmt: skip
        yield Session(workdir / "dev", env)
    except NotReady as exc:
        raise DemoError(str(exc)) from None
    finally:
        stop(process, timeout=15)
        log.close()


def show(kubectl: Kubectl, title: str, *args: str) -> None:
    print(f"$ {shlex.join(['kubectl', *args])}    # {title}")
    print(kubectl(*args))


def get(kubectl: Kubectl, *args: str) -> Any:
    return json.loads(kubectl("get", *args, "-o", "json"))


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for item in (obj.get("status") or {}).get("conditions") or ():
        if item["type"] == kind:
            return dict(item)
    return {}


def is_true(obj: dict[str, Any] | None, kind: str) -> bool:
    return obj is not None and condition(obj, kind).get("status") == "True"


def until(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise DemoError(f"timed out waiting until {what}")
        time.sleep(0.1)
