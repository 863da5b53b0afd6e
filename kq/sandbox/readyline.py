"""The contract of ``kq apiserver`` and ``kq dev`` with scripts: one stdout line holding
``ready`` and, as its last word, the kubeconfig path; helpers for whoever starts them."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


class NotReady(RuntimeError):
    """The process exited or stayed silent; the message ends with its log's tail."""


def wait_for_kubeconfig(process: subprocess.Popen[str], log_path: Path, timeout: float) -> Path:
    """Read the process's stdout until its ready line; kill it and raise if none comes."""
    assert process.stdout is not None, "start the process with stdout=PIPE and text=True"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        words = line.split()
        if "ready" in line and words and words[-1].endswith("kubeconfig"):
            return Path(words[-1])
    process.kill()
    process.wait()
    raise NotReady(f"{process.args!r} did not become ready:\n{log_path.read_text()[-4000:]}")


def stop(process: subprocess.Popen[str], timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout``."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
