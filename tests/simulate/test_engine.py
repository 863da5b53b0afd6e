"""The simulator's driver on small traces: order, preemption, fair sharing, determinism."""

from __future__ import annotations

import json
from pathlib import Path

from kq.simulate.figures import compute
from kq.simulate.files import run_data
from kq.simulate.run import prepare, simulate
from kq.simulate.setup import load_setup
from tests.simulate.helpers import (
    FLAVOR,
    cluster_queue,
    job,
    local_queue,
    run_files,
    write_setup,
    write_trace,
)


def test_fifo_waits_and_finishes(tmp_path: Path) -> None:
    setup = write_setup(tmp_path / "s.yaml", FLAVOR, cluster_queue("cq", 4), local_queue("cq"))
    trace = write_trace(
        tmp_path / "t.yaml",
        [job("a", 0, "cq", 3, 10), job("b", 1, "cq", 3, 10), job("c", 2, "cq", 1, 5)],
    )
    run = run_files(setup, trace)
    records = run.recorder.workloads
    # b waits for a and is retried when a finishes: the room is the queue's own, so it does
    # not wait for the batched retry; c fits beside a at once (BestEffortFIFO lets it pass b).
    assert [records[f"default/{k}"].first_admission for k in "abc"] == [0, 10, 2]
    assert records["default/b"].finished == 20
    assert records["default/a"].stints[0].flavors == {"cpu": "default"}
    assert run.pending == []
    assert run.end == 20


def test_strict_fifo_holds_back_the_small_one(tmp_path: Path) -> None:
    cq = cluster_queue("cq", 4, queueingStrategy="StrictFIFO")
    setup = write_setup(tmp_path / "s.yaml", FLAVOR, cq, local_queue("cq"))
    trace = write_trace(
        tmp_path / "t.yaml",
        [job("a", 0, "cq", 3, 10), job("b", 1, "cq", 3, 10), job("c", 2, "cq", 1, 5)],
    )
    records = run_files(setup, trace).recorder.workloads
    assert records["default/c"].first_admission == 10


def test_preemption_evicts_requeues_and_reruns(tmp_path: Path) -> None:
    cq = cluster_queue("cq", 4, preemption={"withinClusterQueue": "LowerPriority"})
    setup = write_setup(tmp_path / "s.yaml", FLAVOR, cq, local_queue("cq"))
    trace = write_trace(
        tmp_path / "t.yaml",
        [job("low", 0, "cq", 4, 10, priority=1), job("high", 3, "cq", 4, 5, priority=10)],
    )
    run = run_files(setup, trace)
    low, high = run.recorder.workloads["default/low"], run.recorder.workloads["default/high"]
    assert high.wait == 0
    assert high.finished == 8
    assert low.preemptions == 1
    assert (low.stints[0].start, low.stints[0].end) == (0, 3)
    assert low.stints[0].evicted_by == "default/high"
    assert low.stints[0].reason == "InClusterQueue"
    # Requeued, admitted again when high is done, and run from the start.
    assert (low.stints[1].start, low.finished) == (8, 18)
    figures = run_data(run, compute(run))
    assert figures["clusterQueues"]["cq"]["preemptions"] == 1


def _fair_sharing_setup(tmp_path: Path) -> tuple[Path, Path]:
    setup = write_setup(
        tmp_path / "s.yaml",
        FLAVOR,
        cluster_queue("cq-a", 2, cohort="c"),
        cluster_queue("cq-b", 2, cohort="c"),
        cluster_queue("lender", 6, cohort="c"),
        local_queue("cq-a"),
        local_queue("cq-b"),
    )
    trace = write_trace(
        tmp_path / "t.yaml",
        [
            job("a-big", 0, "cq-a", 6, 100),
            job("b-small", 0, "cq-b", 4, 50),
            job("a-next", 10, "cq-a", 4, 10),
            job("b-next", 20, "cq-b", 4, 10),
        ],
    )
    return setup, trace


def test_fair_sharing_changes_the_order(tmp_path: Path) -> None:
    setup, trace = _fair_sharing_setup(tmp_path)
    plain = run_files(setup, trace).recorder.workloads
    # Both borrow as much: first come, first served, once b-small's release is retried.
    assert plain["default/a-next"].first_admission == 51
    assert plain["default/b-next"].first_admission == 61
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
        "fairSharing:\n  enable: true\n"
    )
    fair = run_files(setup, trace, config).recorder.workloads
    # cq-b's share is lower than cq-a's (which borrows 4 already): it goes first.
    assert fair["default/b-next"].first_admission == 51
    assert fair["default/a-next"].first_admission == 61


def test_same_input_same_figures(tmp_path: Path) -> None:
    setup, trace = _fair_sharing_setup(tmp_path)
    runs = [run_files(setup, trace) for _ in range(2)]
    data = [run_data(run, compute(run)) for run in runs]
    for figures in data:
        figures.pop("wallSeconds")
    assert json.dumps(data[0], sort_keys=True) == json.dumps(data[1], sort_keys=True)


def test_borrowed_and_lent_figures(tmp_path: Path) -> None:
    setup = write_setup(
        tmp_path / "s.yaml",
        FLAVOR,
        cluster_queue("borrower", 2, cohort="c"),
        cluster_queue("lender", 6, cohort="c", lendingLimit=4),
        local_queue("borrower"),
    )
    trace = write_trace(tmp_path / "t.yaml", [job("w", 0, "borrower", 6, 10)])
    run = run_files(setup, trace)
    series = run_data(run, compute(run))["series"]
    assert series["ClusterQueue/borrower"]["borrowed"]["default/cpu"][0] == 4
    assert series["ClusterQueue/lender"]["lent"]["default/cpu"][0] == 4
    assert series["Cohort/c"]["used"]["default/cpu"][0] == 6


def test_until_stops_the_clock(tmp_path: Path) -> None:
    setup = write_setup(tmp_path / "s.yaml", FLAVOR, cluster_queue("cq", 4), local_queue("cq"))
    trace = write_trace(tmp_path / "t.yaml", [job("a", 0, "cq", 3, 10), job("b", 30, "cq", 1, 5)])
    run = simulate(prepare("t", load_setup([setup]), trace), until=20)
    assert run.end == 10
    assert run.recorder.workloads["default/b"].first_admission is None
    assert run.pending == []  # b never arrived


def test_a_pod_that_requests_nothing_is_admitted_beside_a_full_queue(tmp_path: Path) -> None:
    # Captured clusters hold such Workloads (a container without requests); Kueue admits them.
    setup = write_setup(tmp_path / "s.yaml", FLAVOR, cluster_queue("cq", 4), local_queue("cq"))
    nothing = job("nothing", 1, "cq", 0, 5) | {"requests": {}}
    trace = write_trace(tmp_path / "t.yaml", [job("full", 0, "cq", 4, 10), nothing])
    records = run_files(setup, trace).recorder.workloads
    assert records["default/nothing"].first_admission == 1
    assert records["default/nothing"].finished == 6


def test_long_requeue_interval_paces_retries_of_parked_workloads(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("featureGates:\n  SchedulerLongRequeueInterval: true\n")

    def first_admission(cpu: int, gate: bool, lender: bool = True) -> float | None:
        cqs = [cluster_queue("cq", 4, cohort="co")]
        if lender:
            cqs.append(cluster_queue("lender", 4, cohort="co"))
        setup = write_setup(tmp_path / "s.yaml", FLAVOR, *cqs, local_queue("cq"))
        jobs = [job("a", 0, "cq", 2, 5), job("b", 0, "cq", 2, 6), job("c", 1, "cq", cpu, 1)]
        trace = write_trace(tmp_path / "t.yaml", jobs)
        run = run_files(setup, trace, config if gate else None)
        return run.recorder.workloads["default/c"].first_admission

    # c (6 cpu, 2 of them borrowed) parks at 1. a's release at 5 asks for a retry 10 s
    # later, as Kueue's gate has it; b's at 6 folds into it. Without the gate the retry
    # comes 1 s later, when b is gone too.
    assert first_admission(6, gate=True) == 15
    assert first_admission(6, gate=False) == 6
    # With nothing to borrow, c (4 cpu) fits its queue's own quota at b's release, and is
    # retried then, gate or not.
    assert first_admission(4, gate=True, lender=False) == 6
