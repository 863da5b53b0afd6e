"""The live-cluster flags refuse what they would ignore; a Workload becomes a trace entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from kq.cli import main
from kq.simulate.fromcluster import FromCluster
from kq.simulate.fromcluster import _notes as read_notes
from kq.simulate.history import History, _run, entry
from tests.simulate.helpers import FLAVOR, cluster_queue, local_queue, write_setup

T0 = "2026-01-01T00:00:00Z"


def _setup(tmp_path: Path) -> Path:
    return write_setup(tmp_path / "setup.yaml", FLAVOR, cluster_queue("cq", 4), local_queue("cq"))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--trace", "t.yaml", "--kubeconfig", "k"], "--kubeconfig: give --from-cluster"),
        (["--trace", "t.yaml", "--since", "1h"], "--since: only with --trace-from-cluster"),
        (["--trace-from-cluster", "--since", "soon"], "--since: "),
        (["--trace-from-cluster", "--since", "0"], "--since: must be a positive duration"),
        (["--trace-from-cluster", "--kubeconfig", "missing.kubeconfig"], "reading the cluster"),
    ],
)
def test_bad_cluster_flags_stop_before_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    out = tmp_path / "out"
    assert main(["simulate", str(_setup(tmp_path)), *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert "nothing was simulated" in err
    assert not out.exists()


def test_no_setup_and_no_cluster_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--trace", "t.yaml"]) == 2
    assert "no setup: give YAML files or directories, or --from-cluster" in capsys.readouterr().err


def _workload(conditions: list[dict[str, str]]) -> dict[str, object]:
    container = {"name": "c", "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}}}
    return {
        "metadata": {"name": "w", "namespace": "ns", "creationTimestamp": T0},
        "spec": {"queueName": "lq", "priority": 7, "priorityClassName": "gone",
                 "podSets": [{"name": "main", "count": 3, "template": {"spec": {
                     "containers": [container], "nodeSelector": {"pool": "a"}}}}]},
        "status": {"conditions": conditions},
    }  # fmt: skip


def _cond(kind: str, at: str, status: str = "True") -> dict[str, str]:
    return {"type": kind, "status": status, "lastTransitionTime": at}


def test_a_finished_workload_runs_from_its_last_admission_to_its_finish() -> None:
    finished = _workload([_cond("Admitted", "2026-01-01T00:10:00Z"),
                          _cond("Finished", "2026-01-01T00:12:30Z")])  # fmt: skip
    assert _run(finished, now=0) == (150, False)
    made = entry(finished, 100.0, 150, {"other"})
    assert made["priority"] == 7  # its class is not in the setup: the number alone
    assert "priorityClass" not in made
    assert made["podSets"] == [{"name": "main", "count": 3,
                                "requests": {"cpu": "1500m", "memory": "2Gi"},
                                "nodeSelector": {"pool": "a"}}]  # fmt: skip


def test_running_pending_and_never_run_workloads() -> None:
    running = _workload([_cond("Admitted", "2026-01-01T00:10:00Z")])
    assert _run(running, now=1767226200 + 60) == (60, True)
    assert _run(_workload([]), now=0) == "not admitted: run time unknown"
    never = _workload([_cond("Finished", "2026-01-01T00:01:00Z")])
    assert _run(never, now=0) == "finished without running"


def test_a_malformed_kubeconfig_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "bad.kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    code = main(["simulate", "--from-cluster", "--trace", "t.yaml", "--kubeconfig",
                 str(kubeconfig), "--out", str(tmp_path / "out")])  # fmt: skip
    assert code == 2
    assert f"reading the cluster: kubeconfig {kubeconfig}: " in capsys.readouterr().err


def test_a_window_where_nothing_ran_says_so() -> None:
    history = History(skipped={"not admitted: run time unknown": 2})
    notes = read_notes(FromCluster(history=history))
    assert notes == ["from the cluster: no workload that ran in the window",
                     "  left out: 2 (not admitted: run time unknown)"]  # fmt: skip
