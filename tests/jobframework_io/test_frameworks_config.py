"""``integrations.frameworks`` never ignores a name silently: unknown names stop ``kq run``,
Kueue frameworks kq has no plugin for are warned about."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.controllers.helpers import apply, namespace, suffix
from tests.harness import REPO, Cluster
from tests.kqrun import kq_run


def test_an_unknown_framework_stops_kq_run_naming_it(cluster: Cluster, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("integrations:\n  frameworks: [batch/job, example.com/widget]\n")
    done = subprocess.run(
        [sys.executable, "-m", "kq", "run", "--config", str(config),
         "--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "integrations.frameworks: unknown framework(s) example.com/widget" in done.stderr
    assert "kq integrates: batch/job" in done.stderr


def test_a_kueue_framework_kq_lacks_is_warned_about(cluster: Cluster, tmp_path: Path) -> None:
    ns = f"kq-system-{suffix()}"
    apply(cluster, tmp_path / "cache", namespace(ns))
    extra = "integrations:\n  frameworks: [batch/job, pod]\n"
    with kq_run(cluster, tmp_path / "run", ns, extra) as log:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = log.read_text()
            if "kq has no integration" in text:
                break
            time.sleep(0.1)
        assert "kq has no integration for this Kueue framework" in text
        assert "framework=pod" in text
