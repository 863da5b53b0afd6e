"""``integrations.frameworks`` never ignores a name silently: unknown names stop ``kq run``,
Kueue frameworks kq has no plugin for are warned about."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.controllers.helpers import apply, namespace, suffix
from tests.harness import REPO, Cluster, wait_until
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


def _log_until(log: Path, words: str) -> str:
    def text() -> str | None:
        found = log.read_text()
        return found if words in found else None

    return wait_until(text, f"{words!r} in kq run's log", within=30)


def test_a_kueue_framework_kq_lacks_is_warned_about(cluster: Cluster, tmp_path: Path) -> None:
    ns = f"kq-system-{suffix()}"
    apply(cluster, tmp_path / "cache", namespace(ns))
    extra = "integrations:\n  frameworks: [batch/job, kubeflow.org/pytorchjob]\n"
    with kq_run(cluster, tmp_path / "run", ns, extra) as log:
        # One JSON object a line: kq run's log format, for the job framework's lines too.
        lines = [json.loads(line) for line in _log_until(log, "kq has no integration").splitlines()]
        lacking = [line["framework"] for line in lines if "kq has no integration" in line["event"]]
        assert lacking == ["kubeflow.org/pytorchjob"]


def test_group_kind_concurrency_sizes_the_workers(cluster: Cluster, tmp_path: Path) -> None:
    # Kueue's v1beta2 default: kinds kq reconciles get the workers; the others are named.
    ns = f"kq-system-{suffix()}"
    apply(cluster, tmp_path / "cache", namespace(ns))
    extra = (
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\ncontroller:\n"
        "  groupKindConcurrency:\n    Job.batch: 5\n    Workload.kueue.x-k8s.io: 10\n"
        "    ClusterQueue.kueue.x-k8s.io: 5\n"
    )
    with kq_run(cluster, tmp_path / "run", ns, extra) as log:
        lines = [json.loads(line) for line in _log_until(log, "job controllers").splitlines()]
        started = next(line for line in lines if line["event"] == "starting job controllers")
        assert started["workers"] == 5
        unread = [line["group_kind"] for line in lines if "no worker pool" in line["event"]]
        assert unread == ["ClusterQueue.kueue.x-k8s.io"]
