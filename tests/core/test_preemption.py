"""Classic preemption: minimal victim sets, policies and cohort rules (semantics §5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from kq.api.quotas import FlavorResource
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.scheduler.cycle import NO_LONGER_FITS, OVERLAPPING_TARGETS
from kq.scheduler.decisions import Admit
from kq.scheduler.protocols import Target
from kq.workload.info import WorkloadInfo
from tests.core.world import World, pending, plugins, preempt


def three_queues(alpha_preemption: dict[str, Any]) -> World:
    world = World()
    world.flavor("f")
    for name in ("alpha", "beta", "gamma"):
        spec = {"preemption": alpha_preemption} if name == "alpha" else {}
        world.cluster_queue(name, [{"f": {"cpu": 2}}], cohort="c", **spec)
        world.local_queue(name, name, name)
    return world


def test_minimal_set_across_queue_and_cohort() -> None:
    world = three_queues({"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"})
    low = world.submit("alpha-low", "alpha", {"cpu": 1}, namespace="alpha", priority=-1)
    mid = world.submit("beta-mid", "beta", {"cpu": 1}, namespace="beta", priority=0)
    high = world.submit("beta-high", "beta", {"cpu": 4}, namespace="beta", priority=1)
    world.run(3)
    assert world.admitted() == {low, mid, high}
    newcomer = world.submit("alpha-mid", "alpha", {"cpu": 2}, namespace="alpha", priority=0)
    decision = preempt(world.cycle(), newcomer)
    assert sorted((v.key, v.reason) for v in decision.victims) == [
        (low, "InClusterQueue"),
        (mid, "InCohortReclamation"),
    ]


def test_no_cohort_preemption_when_it_would_borrow_without_borrow_within_cohort() -> None:
    world = three_queues({"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"})
    mine = world.submit("alpha-own", "alpha", {"cpu": 2}, namespace="alpha", priority=5)
    borrower = world.submit("beta-big", "beta", {"cpu": 4}, namespace="beta", priority=-5)
    world.run(2)
    assert world.admitted() == {mine, borrower}
    newcomer = world.submit("alpha-high", "alpha", {"cpu": 2}, namespace="alpha", priority=10)
    decision = preempt(world.cycle(), newcomer)
    assert [(v.key, v.reason) for v in decision.victims] == [(mine, "InClusterQueue")]


def test_borrow_within_cohort_respects_max_priority_threshold() -> None:
    policy = {
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 0},
    }
    world = three_queues(policy)
    mine = world.submit("alpha-own", "alpha", {"cpu": 2}, namespace="alpha", priority=5)
    cheap = world.submit("beta-cheap", "beta", {"cpu": 4}, namespace="beta", priority=-5)
    world.run(2)
    assert world.admitted() == {mine, cheap}
    newcomer = world.submit("alpha-high", "alpha", {"cpu": 2}, namespace="alpha", priority=10)
    decision = preempt(world.cycle(), newcomer)
    assert [(v.key, v.reason) for v in decision.victims] == [
        (cheap, "InCohortReclaimWhileBorrowing")
    ]


def test_lower_priority_never_evicts_equal_priority() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue(
        "q", [{"f": {"cpu": 2}}], preemption={"withinClusterQueue": "LowerPriority"}
    )
    world.local_queue("default", "q", "q")
    first = world.submit("first", "q", {"cpu": 2}, priority=3)
    world.cycle()
    equal = world.submit("equal", "q", {"cpu": 2}, priority=3)
    decision = pending(world.cycle(), equal)
    assert decision.reason == "WaitingForQuota"
    assert world.admitted() == {first}


def test_lower_or_newer_equal_priority_evicts_the_newer_equal() -> None:
    world = World()
    world.flavor("f")
    spec: dict[str, Any] = {"preemption": {"withinClusterQueue": "LowerOrNewerEqualPriority"}}
    world.cluster_queue("q", [{"f": {"cpu": 2}}], **spec)
    world.local_queue("default", "q", "q")
    older = world.submit("older", "q", {"cpu": 2})
    newer = world.submit("newer", "q", {"cpu": 2})
    # Admit the newer one first, as if the older one had arrived late to the queue.
    world.queues.delete_workload(older)
    world.cycle()
    assert world.queues.add_workload(world.workloads[older]) is None
    decision = preempt(world.cycle(), older)
    assert [v.key for v in decision.victims] == [newer]


def test_head_waiting_for_preemption_reserves_capacity_in_the_cohort() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue(
        "a", [{"f": {"cpu": 4}}], cohort="c", preemption={"withinClusterQueue": "LowerPriority"}
    )
    world.cluster_queue("b", [{"f": {"cpu": 0}}], cohort="c")
    world.local_queue("a", "a", "a")
    world.local_queue("b", "b", "b")
    held = world.submit("held", "a", {"cpu": 2}, namespace="a", priority=10)
    world.cycle()
    waiting = world.submit("waiting", "a", {"cpu": 4}, namespace="a", priority=10)
    sneaky = world.submit("sneaky", "b", {"cpu": 2}, namespace="b")
    result = world.cycle()
    assert "2 more needed" in pending(result, waiting).message
    # sneaky fitted at nomination, but the waiting head holds a's unused nominal quota.
    assert pending(result, sneaky).message == NO_LONGER_FITS
    assert world.admitted() == {held}


def test_partial_admission_reduces_count() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("q", [{"f": {"cpu": 5}}])
    world.local_queue("default", "q", "q")
    key = world.submit("partial", "q", {"cpu": 2}, count=5, min_count=1)
    decision = world.cycle().by_key[key]
    assert isinstance(decision, Admit)
    (psa,) = decision.admission.pod_set_assignments
    assert (psa.count, dict(psa.resource_usage)) == (2, {"cpu": 4000})


def test_hierarchical_reclaim_takes_back_lent_quota_from_another_subtree() -> None:
    world = World()
    world.flavor("f")
    world.cohort("root")
    world.cohort("left", "root")
    world.cohort("right", "root")
    world.cluster_queue(
        "left-cq",
        [{"f": {"cpu": 4}}],
        cohort="left",
        preemption={"reclaimWithinCohort": "Any"},
    )
    world.cluster_queue("right-cq", [{"f": {"cpu": 0}}], cohort="right")
    world.local_queue("left", "q", "left-cq")
    world.local_queue("right", "q", "right-cq")
    borrower = world.submit("borrower", "q", {"cpu": 4}, namespace="right", priority=100)
    world.cycle()
    assert world.admitted() == {borrower}
    owner = world.submit("owner", "q", {"cpu": 2}, namespace="left", priority=0)
    decision = preempt(world.cycle(), owner)
    assert [(v.key, v.reason) for v in decision.victims] == [(borrower, "InCohortReclamation")]
    assert decision.victims[0].message.endswith(
        "preemptor path: /root/left/left-cq; preemptee path: /root/right/right-cq"
    )


def test_two_preemptors_never_claim_the_same_victim_in_one_cycle() -> None:
    world = World()
    world.flavor("f")
    for name, nominal in (("a", 2), ("b", 2), ("c", 0)):
        world.cluster_queue(
            name, [{"f": {"cpu": nominal}}], cohort="co", preemption={"reclaimWithinCohort": "Any"}
        )
        world.local_queue(name, name, name)
    victim = world.submit("borrower", "c", {"cpu": 4}, namespace="c")
    world.cycle()
    first = world.submit("first", "a", {"cpu": 2}, namespace="a")
    second = world.submit("second", "b", {"cpu": 2}, namespace="b")
    result = world.cycle()
    assert [v.key for v in preempt(result, first).victims] == [victim]
    decision = pending(result, second)
    assert decision.message == OVERLAPPING_TARGETS
    world.complete_eviction(victim)
    world.run(2)
    assert {first, second} <= world.admitted()


class Relabel:
    """A third-party policy: Kueue's victims, under a reason and words of its own."""

    NAME: ClassVar[str] = "Relabel"

    def targets(
        self,
        snapshot: Snapshot,
        cq: ClusterQueueSnapshot,
        preemptor: WorkloadInfo,
        usage: Mapping[FlavorResource, int],
    ) -> Sequence[Target]:
        classic = plugins().preemptors["ClassicPreemption"]
        return [
            Target(t.workload, "MakeRoomForTraining", "room for the training run")
            for t in classic.targets(snapshot, cq, preemptor, usage)
        ]


def test_a_policy_may_preempt_with_its_own_reason_and_words() -> None:
    world = World()
    world.scheduler.plugins = replace(
        plugins(), preemptors={**plugins().preemptors, "Relabel": Relabel()}
    )
    world.flavor("f")
    world.cluster_queue("q", [{"f": {"cpu": 1}}],
                        preemption={"withinClusterQueue": "LowerPriority"},
                        annotations={"kq.dev/preemption-policy": "Relabel"})  # fmt: skip
    world.local_queue("q", "q", "q")
    low = world.submit("low", "q", {"cpu": 1}, namespace="q", priority=0)
    world.run(1)
    high = world.submit("high", "q", {"cpu": 1}, namespace="q", priority=10)
    (victim,) = preempt(world.cycle(), high).victims
    assert (victim.key, victim.reason) == (low, "MakeRoomForTraining")
    assert " due to room for the training run; " in victim.message
