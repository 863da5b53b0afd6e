"""`kubectl kq explain workload` as a user runs it, and the figures of its "Missing" lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

BIN = Path(sys.executable).parent  # where kubectl-kq is installed
MISSING = re.compile(r"^Missing (\S+) (\S+) in flavor (\S+): it needs (\S+), (\S+) is free", re.M)


def explain(env: Mapping[str, str], namespace: str, name: str) -> str:
    """What ``kubectl kq explain workload NAME -n NAMESPACE`` prints (``env``: KUBECONFIG...)."""
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        ["kubectl", "kq", "explain", "workload", name, "-n", namespace],
        capture_output=True, text=True, env={**env, "PATH": path}, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"kubectl kq explain workload {name}: {done.stderr}"
    return done.stdout


def missing(explained: str) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(flavor, resource) -> (missing, needed, free) of explain's "Missing" lines (whole
    amounts: CPUs, chips)."""
    return {
        (flavor, resource): (int(short), int(need), int(free))
        for short, resource, flavor, need, free in MISSING.findall(explained)
    }
