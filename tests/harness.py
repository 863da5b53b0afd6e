"""Black-box handles on an API server: the embedded one (a `kq apiserver` process) or a real one.

Both are separate processes, so tests may call the real kubectl synchronously and talk HTTP to
either backend the same way a cluster is talked to.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kq.sandbox.readyline import stop, wait_for_kubeconfig

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Cluster:
    """A running API server: which backend, its kubeconfig and base URL."""

    backend: str
    kubeconfig: Path
    server: str

    def kubectl(
        self, *args: str, input: str | None = None, cache_dir: Path, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this cluster with its own discovery cache."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBECACHEDIR": str(cache_dir)}
        return subprocess.run(
            ["kubectl", *args],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )


def _server_from_kubeconfig(kubeconfig: Path) -> str:
    match = re.search(r"server:\s*(\S+)", kubeconfig.read_text())
    if not match:
        raise RuntimeError(f"{kubeconfig}: no server URL")
    return match.group(1).strip("'\"")


@contextmanager
def embedded_apiserver(data_dir: Path, extra_args: Sequence[str] = ()) -> Iterator[Cluster]:
    """Start `kq apiserver` on a free port and wait for its `ready <kubeconfig>` line."""
    log_path = data_dir / "apiserver.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kq", "apiserver", "--data-dir", str(data_dir), *extra_args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=REPO,
        )
    try:
        kubeconfig = wait_for_kubeconfig(process, log_path, READY_TIMEOUT_S)
        yield Cluster("embedded", kubeconfig, _server_from_kubeconfig(kubeconfig))
    finally:
        stop(process)
