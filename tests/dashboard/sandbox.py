"""``kq dev`` with its dashboard, on the test's backend: its own embedded API server, or
``--kubeconfig`` on the shared real one, left as it was found (``traces.no_trace``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from kq.sandbox.readyline import stop, wait_for_kubeconfig
from tests.e2e.traces import no_trace
from tests.harness import REPO, Cluster

READY_TIMEOUT_S = 90.0


@contextmanager
def kq_dev_dashboard(
    cluster: Cluster, work: Path, profile: str, speed: float
) -> Iterator[tuple[Path, str]]:
    """Yields the sandbox's kubeconfig and its dashboard's URL (the line after the ready
    line). Its log is ``work/kq-dev.log``."""
    with ExitStack() as stack:
        where = ["--fresh"]
        if cluster.backend == "real":
            stack.enter_context(no_trace(cluster, work / "cleanup-cache"))
            where = ["--kubeconfig", str(cluster.kubeconfig)]
        log_path = work / "kq-dev.log"
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "kq", "dev", "--data-dir", str(work / "dev"), *where,
                 "--profile", profile, "--speed", str(speed)],
                stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO,
            )  # fmt: skip
        try:
            kubeconfig = wait_for_kubeconfig(process, log_path, READY_TIMEOUT_S)
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith("kq dashboard: http://"), line
            yield kubeconfig, line.split()[-1]
        finally:
            stop(process, timeout=15)
            if process.stdout is not None:
                process.stdout.close()
