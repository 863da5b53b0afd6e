"""The series kq moves from Workload transitions seen on the watch, and eviction counting."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kq.controllers.metrics import (
    Evictions,
    WorkloadTransitions,
    cycle,
    preemption_skips,
    split_reason,
)
from kq.observability.job_metrics import workload_created
from kq.observability.metric_options import role
from kq.observability.metrics import REGISTRY
from kq.queue.requeue import RequeueReason
from kq.runtime.store import Change, EventType
from kq.scheduler.assignment import Assignment
from kq.scheduler.cycle import NO_LONGER_FITS, OVERLAPPING_TARGETS, CycleResult
from kq.scheduler.decisions import Pending
from kq.scheduler.modes import Mode
from kq.workload.status import rfc3339

Obj = dict[str, Any]
CQ = "cq-transitions"


def wl(name: str, *conditions: tuple[str, str, float], admitted: bool = True) -> Obj:
    status: Obj = {
        "conditions": [
            {"type": t, "status": s, "reason": t, "lastTransitionTime": rfc3339(at)}
            for t, s, at in conditions
        ]
    }
    if admitted:
        status["admission"] = {"clusterQueue": CQ}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                     "creationTimestamp": rfc3339(time.time() - 100)},
        "spec": {"queueName": "lq", "priorityClassName": "high"},
        "status": status,
    }  # fmt: skip


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {**labels, "replica_role": role()}) or 0.0


def leading() -> WorkloadTransitions:
    transitions = WorkloadTransitions()
    transitions.is_leader = lambda: True
    return transitions


def test_pods_ready_observes_both_wait_times_once() -> None:
    now = time.time()
    labels = {"cluster_queue": CQ, "priority_class": "high"}
    before = value("kueue_admitted_until_ready_wait_time_seconds_count", **labels)
    before_sum = value("kueue_admitted_until_ready_wait_time_seconds_sum", **labels)
    old = wl("r", ("Admitted", "True", now - 30))
    new = wl("r", ("Admitted", "True", now - 30), ("PodsReady", "True", now))
    transitions = leading()
    transitions(Change(EventType.MODIFIED, new, old))
    transitions(Change(EventType.MODIFIED, new, new))  # no transition: nothing more
    assert value("kueue_admitted_until_ready_wait_time_seconds_count", **labels) == before + 1
    waited = value("kueue_admitted_until_ready_wait_time_seconds_sum", **labels) - before_sum
    assert 29 <= waited <= 60
    assert value("kueue_ready_wait_time_seconds_count", **labels) >= 1


def test_released_after_eviction_observes_the_eviction_latency() -> None:
    now = time.time()
    labels = {"cluster_queue": CQ, "reason": "Deactivated"}
    before = value("kueue_workload_eviction_latency_seconds_count", **labels)
    evicted = ("Evicted", "True", now - 5)
    old = wl("e", evicted)
    new = wl("e", evicted, admitted=False)
    new["status"]["conditions"][0]["reason"] = "DeactivatedDueToRequeuingLimitExceeded"
    leading()(Change(EventType.MODIFIED, new, old))
    assert value("kueue_workload_eviction_latency_seconds_count", **labels) == before + 1


def test_a_follower_counts_nothing_but_knows_the_finished() -> None:
    labels = {"cluster_queue": CQ, "priority_class": "high"}
    before = value("kueue_finished_workloads_total", **labels)
    follower = WorkloadTransitions()  # is_leader: False until registered
    done = wl("f", ("Finished", "True", time.time()))
    follower(Change(EventType.MODIFIED, done, wl("f")))
    assert value("kueue_finished_workloads_total", **labels) == before
    assert follower.finished == {"ns/f": (CQ, ("lq", "ns"))}


def test_each_reason_and_cause_is_counted_once_per_workload() -> None:
    evictions = Evictions()
    labels = {"cluster_queue": CQ, "reason": "PodsReadyTimeout", "underlying_cause": "",
              "priority_class": "high"}  # fmt: skip
    total, once = "kueue_evicted_workloads_total", "kueue_evicted_workloads_once_total"
    before = (value(total, **labels), value(once, **labels))
    for _ in range(3):
        evictions.evicted(wl("o"), CQ, "PodsReadyTimeout")
    assert (value(total, **labels), value(once, **labels)) == (before[0] + 3, before[1] + 1)
    assert split_reason("DeactivatedDueToAdmissionCheck") == ("Deactivated", "AdmissionCheck")
    assert split_reason("Preempted") == ("Preempted", "")


def test_workload_creation_latency_only_for_a_job_of_generation_one() -> None:
    stamp = "2026-01-01T00:00:00Z"
    job: Obj = {"kind": "Job", "metadata": {"generation": 1, "creationTimestamp": stamp}}
    created = {"metadata": {"creationTimestamp": "2026-01-01T00:00:02Z"}}
    count = "kueue_workload_creation_latency_seconds_count"
    before = value(count, job_kind="Job")
    before_sum = value("kueue_workload_creation_latency_seconds_sum", job_kind="Job")
    workload_created("Job", job, created)
    changed: Obj = {"metadata": {"generation": 2, "creationTimestamp": stamp}}
    workload_created("Job", changed, created)
    assert value(count, job_kind="Job") == before + 1
    assert value("kueue_workload_creation_latency_seconds_sum", job_kind="Job") == before_sum + 2


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["run", "finish", "delete"]))))
def test_finished_workloads_follow_the_watch(events: list[tuple[int, str]]) -> None:
    """Whatever the order of updates and deletions: the finished set is the workloads whose
    last event finished them, and the counter moved once per transition into Finished."""
    transitions = leading()
    labels = {"cluster_queue": CQ, "priority_class": "high"}
    before = value("kueue_finished_workloads_total", **labels)
    stored: dict[str, Obj] = {}
    transitions_into_finished = 0
    for index, what in events:
        name = f"w{index}"
        old = stored.get(name)
        if what == "delete":
            if old is not None:
                transitions(Change(EventType.DELETED, stored.pop(name), None))
            continue
        new = wl(name, ("Finished", "True", 1.0)) if what == "finish" else wl(name)
        was_finished = old is not None and old["status"]["conditions"] != []
        transitions_into_finished += what == "finish" and old is not None and not was_finished
        kind = EventType.ADDED if old is None else EventType.MODIFIED
        transitions(Change(kind, new, old))
        stored[name] = new
    finished = {f"ns/{n}" for n, o in stored.items() if o["status"]["conditions"]}
    assert set(transitions.finished) == finished
    moved = value("kueue_finished_workloads_total", **labels) - before
    assert moved == transitions_into_finished


def test_preemption_skips_are_counted_per_cluster_queue_as_kueue() -> None:
    """Overlapping victims always count; "no longer fits" only for a preempting head; a
    ClusterQueue without skips in a cycle keeps its last value, as Kueue's gauge does."""

    def pending(key: str, cq: str, message: str) -> Pending:
        return Pending(key, cq, "WaitingForQuota", message, RequeueReason.FAILED_AFTER_NOMINATION)

    def assignment(mode: Mode) -> Assignment:
        return Assignment((), {}, 0, mode)

    result = CycleResult(
        (
            pending("ns/a", "cq-a", OVERLAPPING_TARGETS),
            pending("ns/b", "cq-a", NO_LONGER_FITS),
            pending("ns/c", "cq-b", NO_LONGER_FITS),
            pending("ns/d", "cq-b", "something else"),
        ),
        entries=4,
        assignments={
            "ns/a": assignment(Mode.PREEMPT),
            "ns/b": assignment(Mode.RECLAIM),
            "ns/c": assignment(Mode.FIT),
        },
    )
    assert preemption_skips(result) == {"cq-a": 2}
    cycle(result, 0.01)
    assert value("kueue_admission_cycle_preemption_skips", cluster_queue="cq-a") == 2
