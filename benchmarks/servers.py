"""The API servers modes B run against, each yielding its kubeconfig and the processes whose
CPU and memory count as the server's: the embedded ``kq apiserver``, or a real
kube-apiserver + etcd started as the tests start them (``tests/realk8s/plane.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REAL = ("kube-apiserver", "etcd")


@contextmanager
def embedded_server(profile: Path | None = None) -> Iterator[tuple[Path, list[int]]]:
    profiler = ["-m", "cProfile", "-o", str(profile)] if profile else []
    with tempfile.TemporaryDirectory() as data:
        server = ["-m", "kq", "apiserver", "--data-dir", data, "--history", "200000"]
        process = subprocess.Popen(
            [sys.executable, *profiler, *server],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                paths = [w for w in line.split() if w.endswith("kubeconfig")]
                if "ready" in line and paths:
                    yield Path(paths[-1]), [process.pid]
                    break
            else:
                raise RuntimeError("kq apiserver did not become ready")
        finally:
            process.terminate()
            process.wait(timeout=30)


@contextmanager
def real_server() -> Iterator[tuple[Path, list[int]]]:
    """A fresh kube-apiserver + etcd (built by tests/realk8s/build.sh). Their conversion
    webhook serves in a thread of this process, as ``kq run``'s would beside the controller;
    its CPU is this process's, not the server's."""
    from tests.realk8s.plane import real_control_plane  # the benchmark needs no tests elsewhere

    with tempfile.TemporaryDirectory() as work, real_control_plane(Path(work)) as plane:
        yield plane.kubeconfig, _children(REAL)


def _children(names: tuple[str, ...]) -> list[int]:
    """This process's children running one of ``names`` (the plane keeps no pids to share)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm, rest = (entry / "stat").read_text().rsplit(")", 1)
        except OSError:  # gone meanwhile
            continue
        if int(rest.split()[1]) == os.getpid() and comm.split("(", 1)[1] in names:
            found.append(int(entry.name))
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of live processes, from /proc (Linux)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pids: list[int]) -> float:
    """The sum of the processes' peak resident sets (each its own peak, not a joint one)."""
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return total / 1024
