"""``kq dev`` and ``kubectl get --watch`` as the end-to-end tests run them: real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kq.sandbox.readyline import stop, wait_for_kubeconfig
from tests.e2e.traces import no_trace
from tests.harness import REPO, Cluster

READY_TIMEOUT_S = 60.0


@contextmanager
def kq_dev(
    work: Path,
    profile: str,
    speed: float,
    *,
    server: Path | None = None,
    extra: Sequence[str] = (),
) -> Iterator[Path]:
    """``kq dev --profile PROFILE`` on a fresh ``work/dev``, or with ``--kubeconfig server``,
    until the block ends; yields its kubeconfig. Its log is ``work/kq-dev.log``. ``extra``:
    more ``kq dev`` options."""
    log_path = work / "kq-dev.log"
    where = ["--fresh"] if server is None else ["--kubeconfig", str(server)]
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kq", "dev", "--data-dir", str(work / "dev"), *where,
             "--profile", profile, "--speed", str(speed), *extra],
            stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO,
        )  # fmt: skip
    try:
        yield wait_for_kubeconfig(process, log_path, READY_TIMEOUT_S)
    finally:
        stop(process, timeout=15)
        if process.stdout is not None:
            process.stdout.close()


@contextmanager
def kq_dev_on(
    cluster: Cluster, work: Path, profile: str, speed: float, extra: Sequence[str] = ()
) -> Iterator[Path]:
    """``kq dev`` on the test's backend: its own embedded server, or ``--kubeconfig`` on the
    shared real one, which it leaves as it found it (``traces.no_trace``)."""
    if cluster.backend != "real":
        with kq_dev(work, profile, speed, extra=extra) as kubeconfig:
            yield kubeconfig
        return
    with (
        no_trace(cluster, work / "cleanup-cache"),
        kq_dev(work, profile, speed, server=cluster.kubeconfig, extra=extra) as kubeconfig,
    ):
        yield kubeconfig


@dataclass(frozen=True)
class KubectlSession:
    """The real kubectl on one kubeconfig, with a discovery cache of its own; a command that
    fails fails the test. The scenarios' sandboxes add their own queries to it."""

    kubeconfig: Path
    cache: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBECACHEDIR": str(self.cache)}

    def kubectl(self, *args: str, input: str | None = None) -> str:
        done = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True,
                              env=self.env, timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json"))


@dataclass(frozen=True)
class Seen:
    """One version of an object, as a watch delivered it, and when it arrived."""

    at: float
    object: dict[str, Any]


class KubectlWatch:
    """Every version of the objects a ``kubectl get --watch`` delivers, read in a thread, so
    states that last a moment are seen as they were written."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self._seen: list[Seen] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def seen(self) -> list[Seen]:
        assert self.process.poll() is None, "the kubectl watch ended"
        with self._lock:
            return list(self._seen)

    def _read(self) -> None:
        assert self.process.stdout is not None
        text = ""
        for line in self.process.stdout:
            # One event per line today; gathering lines until they parse also reads it indented.
            text += line
            try:
                event = json.loads(text)
            except json.JSONDecodeError:
                continue
            text = ""
            with self._lock:
                self._seen.append(Seen(time.monotonic(), event["object"]))


@contextmanager
def kubectl_watch(env: Mapping[str, str], *args: str) -> Iterator[KubectlWatch]:
    """``kubectl get ARGS --watch -o json --output-watch-events`` until the block ends."""
    process = subprocess.Popen(
        ["kubectl", "get", *args, "--watch", "-o", "json", "--output-watch-events"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dict(env),
    )  # fmt: skip
    try:
        yield KubectlWatch(process)
    finally:
        stop(process, timeout=5)
        if process.stdout is not None:
            process.stdout.close()
