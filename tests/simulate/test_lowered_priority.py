"""Priority boosts in ``kq simulate``: a LowerPriority budget lowers in memory what kq run's
controller would write, and a trace workload's ``kueue.x-k8s.io/priority-boost`` counts by the
core's rule (the PriorityBoost gate, or a budget's mark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kq.api.priority import LOWERED_BY_BUDGET_ANNOTATION, PRIORITY_BOOST_ANNOTATION
from kq.runtime.resources import WORKLOADS
from kq.simulate.engine import Engine
from kq.simulate.files import workload_rows
from kq.simulate.history import entry
from kq.simulate.plugin_controllers import PluginControllers
from kq.simulate.record import Recorder
from kq.simulate.run import Run, prepare
from kq.simulate.setup import load_setup
from kq.simulate.source import InputError
from tests.budgets.helpers import budget
from tests.simulate.helpers import FLAVOR, cluster_queue, job, run_files, write_setup, write_trace

PREEMPTING = {"withinClusterQueue": "LowerPriority"}


def queue(name: str) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
            "metadata": {"namespace": "default", "name": name},
            "spec": {"clusterQueue": "team"}}  # fmt: skip


def starts(run: Run, name: str) -> list[tuple[float, str | None]]:
    return [(s.start, s.evicted_by) for s in run.recorder.workloads[f"default/{name}"].stints]


def budgeted_files(tmp_path: Path, policy: str) -> tuple[Path, Path]:
    # The budget covers LocalQueue "capped" only: 3600 core-seconds an hour. first takes 1500
    # of them; second would take 3000 more. urgent, in "free", is outside any budget.
    capped = budget("b", {"kind": "LocalQueue", "namespace": "default", "name": "capped"},
                    {"cpu": "1"}, "1h")  # fmt: skip
    capped["spec"]["whenExhausted"] = policy
    if policy == "LowerPriority":
        capped["spec"]["priorityBoost"] = -100
    setup = write_setup(tmp_path / "setup.yaml", FLAVOR,
                        cluster_queue("team", 10, preemption=PREEMPTING),
                        queue("capped"), queue("free"), capped)  # fmt: skip
    trace = write_trace(tmp_path / "trace.yaml", [
        job("first", 0, "capped", 5, 300, maxExecutionSeconds=300),
        job("second", 10, "capped", 5, 600, maxExecutionSeconds=600),
        job("urgent", 100, "free", 5, 100),
    ])  # fmt: skip
    return setup, trace


def budgeted_run(tmp_path: Path, policy: str) -> Run:
    return run_files(*budgeted_files(tmp_path, policy))


def test_lower_priority_admits_at_once_lowered_then_yields_to_the_original_priority(
    tmp_path: Path,
) -> None:
    run = budgeted_run(tmp_path, "LowerPriority")
    # second is over budget: lowered to 0 - 100 and admitted in the room first left; urgent
    # (priority 0, as second was) preempts it; back at -100 it runs again when urgent ends,
    # at 200 (the quota urgent frees is its queue's own: no wait for the batched retry).
    assert starts(run, "second") == [(10.0, "default/urgent"), (200.0, None)]
    assert starts(run, "urgent") == [(100.0, None)]
    assert starts(run, "first") == [(0.0, None)]
    assert run.pending == []
    rows = {row["workload"]: row for row in workload_rows(run)}
    second = rows["default/second"]
    assert (second["priority"], second["effectivePriority"]) == (0, -100)
    assert (rows["default/first"]["priority"], rows["default/first"]["effectivePriority"]) == (0, 0)


def test_wait_holds_the_over_budget_workload_and_nothing_is_preempted(tmp_path: Path) -> None:
    run = budgeted_run(tmp_path, "Wait")
    assert starts(run, "urgent") == [(100.0, None)]
    ((second, evicted),) = starts(run, "second")
    assert second >= 3600.0  # until the window has room again
    assert evicted is None


def test_the_lowering_is_the_plugins_annotations_on_the_simulated_workload(
    tmp_path: Path,
) -> None:
    setup, trace = budgeted_files(tmp_path, "LowerPriority")
    prepared = prepare("test", load_setup([setup]), trace)
    controllers = PluginControllers(
        load_setup([setup]),
        prepared.model,
        prepared.core,
        Recorder(prepared.core, prepared.arrivals),
    )
    engine = Engine(prepared.core.scheduler, prepared.arrivals, controllers)
    controllers.bind(engine)
    engine.run()
    workloads = controllers.context.store(WORKLOADS)
    second, first = workloads.get("default/second"), workloads.get("default/first")
    assert second is not None
    assert first is not None
    annotations = second["metadata"]["annotations"]
    assert annotations == {PRIORITY_BOOST_ANNOTATION: "-100", LOWERED_BY_BUDGET_ANNOTATION: "b"}
    assert "annotations" not in first["metadata"]
    # Evicted and queued again, it stays lowered, as in kq run.
    assert engine.arrivals["default/second"].workload.priority_boost == -100


def boosted_run(tmp_path: Path, gate: bool, annotations: dict[str, str]) -> Run:
    # One core at a time: the order of the three waiting behind "running" is their priority.
    setup = write_setup(tmp_path / "setup.yaml", FLAVOR, cluster_queue("team", 1), queue("q"))
    trace = write_trace(tmp_path / "trace.yaml", [
        job("running", 0, "q", 1, 100),
        job("boosted", 1, "q", 1, 10, priority=10, annotations=annotations),
        job("plain", 2, "q", 1, 10, priority=5),
    ])  # fmt: skip
    config = tmp_path / "config.yaml"
    config.write_text(f"featureGates:\n  PriorityBoost: {str(gate).lower()}\n")
    return run_files(setup, trace, config)


@pytest.mark.parametrize(
    ("gate", "annotations", "boosted_first"),
    [
        (True, {PRIORITY_BOOST_ANNOTATION: "-10"}, False),  # 10 - 10 = 0 < 5
        (False, {PRIORITY_BOOST_ANNOTATION: "-10"}, True),  # the gate off: 10 > 5
        (False, {PRIORITY_BOOST_ANNOTATION: "-10", LOWERED_BY_BUDGET_ANNOTATION: "b"}, False),
    ],
)
def test_a_trace_workload_is_ordered_by_its_effective_priority(
    tmp_path: Path, gate: bool, annotations: dict[str, str], boosted_first: bool
) -> None:
    run = boosted_run(tmp_path, gate, annotations)
    (boosted,), (plain,) = starts(run, "boosted"), starts(run, "plain")
    assert (boosted[0] < plain[0]) is boosted_first
    # Each admitted at the release before it: the core it frees is its queue's own, and
    # enough for one of the two waiting, the first in queue order.
    assert {boosted[0], plain[0]} == {100.0, 110.0}
    row = next(r for r in workload_rows(run) if r["workload"] == "default/boosted")
    assert (row["priority"], row["effectivePriority"]) == (10, 10 if boosted_first else 0)


def test_a_bad_boost_is_refused_with_the_gate_on(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"trace.yaml:\d+: annotations\[kueue.x-k8s.io/prio"):
        boosted_run(tmp_path, True, {PRIORITY_BOOST_ANNOTATION: "low"})


def test_a_captured_workload_keeps_its_boost_and_the_budgets_mark() -> None:
    marks = {PRIORITY_BOOST_ANNOTATION: "-100", LOWERED_BY_BUDGET_ANNOTATION: "b", "other": "x"}
    obj = {
        "metadata": {"namespace": "default", "name": "w", "annotations": marks},
        "spec": {"queueName": "q", "priority": 10, "podSets": []},
    }
    kept = entry(obj, 0.0, 60.0, set())
    assert kept["annotations"] == {PRIORITY_BOOST_ANNOTATION: "-100",
                                   LOWERED_BY_BUDGET_ANNOTATION: "b"}  # fmt: skip
    assert kept["priority"] == 10
