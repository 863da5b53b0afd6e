"""Property tests: no over-commit, no double admission, nothing lost, priorities respected."""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kq.scheduler.decisions import Admit, Preempt
from kq.scheduler.trust import distrust
from tests.core.world import World

FLAVORS = ("on-demand", "spot")
TAINT = {"key": "spot", "value": "true", "effect": "NoSchedule"}
TOLERATION = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}

LIMIT = st.one_of(st.none(), st.integers(0, 4))
QUEUE = st.fixed_dictionaries(
    {
        "quota": st.tuples(
            st.tuples(st.integers(0, 6), LIMIT, LIMIT), st.tuples(st.integers(0, 4), LIMIT, LIMIT)
        ),
        "strategy": st.sampled_from(["BestEffortFIFO", "StrictFIFO"]),
        "within": st.sampled_from(["LowerPriority", "LowerOrNewerEqualPriority", "Never"]),
        "reclaim": st.sampled_from(["Any", "LowerPriority", "Never"]),
        "assigner": st.sampled_from(["InOrder", "MinimizeBorrowing"]),
        "when_can_preempt": st.sampled_from(["TryNextFlavor", "MayStopSearch"]),
    }
)
WORKLOAD = st.fixed_dictionaries(
    {
        "queue": st.integers(0, 3),
        "cpu": st.integers(1, 5),
        "count": st.integers(1, 3),
        "priority": st.integers(0, 3),
        "tolerates": st.booleans(),
        "partial": st.booleans(),
        "late": st.booleans(),
    }
)


def build(queues: list[dict[str, Any]], cohorts: int, requeue_period: float = 0.0) -> World:
    world = World(requeue_period)
    world.flavor("on-demand")
    world.flavor("spot", {"spot": "true"}, [TAINT])
    for i, q in enumerate(queues):
        quotas = {
            flavor: {
                "cpu": (nominal, borrowing, None if lending is None else min(lending, nominal))
            }
            for flavor, (nominal, borrowing, lending) in zip(FLAVORS, q["quota"], strict=True)
        }
        world.cluster_queue(
            f"cq{i}",
            [quotas],
            cohort=f"co{i % cohorts}",
            annotations={"kq.dev/flavor-assignment": q["assigner"]},
            queueingStrategy=q["strategy"],
            flavorFungibility={"whenCanPreempt": q["when_can_preempt"]},
            preemption={"withinClusterQueue": q["within"], "reclaimWithinCohort": q["reclaim"]},
        )
        world.local_queue("ns", f"lq{i}", f"cq{i}")
    return world


def check_quota(world: World) -> None:
    snapshot = world.cache.snapshot()
    for cq in snapshot.cluster_queues.values():
        for flavor in FLAVORS:
            fr = (flavor, "cpu")
            assert snapshot.usage.available(cq.node, fr) >= 0
            quota = cq.spec.quotas[fr]
            if quota.borrowing_limit is not None:
                assert snapshot.used(cq, fr) <= quota.nominal + quota.borrowing_limit
            root = cq.node.root()
            assert snapshot.usage.get(root, fr) <= root.subtree.get(fr, 0)


def check_victims(world: World, decision: Preempt) -> None:
    """Under LowerPriority policies nobody of equal or higher priority is evicted."""
    preemptor = world.workloads[decision.key]
    policy = world.cache.cluster_queues[decision.cluster_queue].preemption
    for victim in decision.victims:
        cached = world.cache.workload(victim.key)
        assert cached is not None
        same_queue = cached.info.cluster_queue == decision.cluster_queue
        rule = policy.within_cluster_queue if same_queue else policy.reclaim_within_cohort
        if rule == "LowerPriority":
            assert world.workloads[victim.key].priority < preemptor.priority
        if rule == "LowerOrNewerEqualPriority":
            assert world.workloads[victim.key].priority <= preemptor.priority


@settings(max_examples=150, deadline=None)
@given(
    st.lists(QUEUE, min_size=2, max_size=4),
    st.integers(1, 2),
    st.lists(WORKLOAD, min_size=1, max_size=20),
    st.lists(st.booleans(), min_size=12, max_size=12),
    st.sampled_from([0.0, 2.0]),
)
def test_admission_invariants(
    queues: list[dict[str, Any]],
    cohorts: int,
    workloads: list[dict[str, Any]],
    finish_plan: list[bool],
    requeue_period: float,
) -> None:
    """``requeue_period``: retries at once, or paced with early releases (a cycle a second)."""
    world = build(queues, cohorts, requeue_period)

    def submit(i: int, w: dict[str, Any]) -> str:
        return world.submit(
            f"w{i}",
            f"lq{w['queue'] % len(queues)}",
            {"cpu": w["cpu"]},
            namespace="ns",
            count=w["count"],
            priority=w["priority"],
            tolerations=[TOLERATION] if w["tolerates"] else [],
            min_count=1 if w["partial"] else None,
        )

    # Late arrivals come with a priority boost, after the early ones hold the quota.
    keys = [submit(i, w) for i, w in enumerate(workloads) if not w["late"]]
    for step, finish in enumerate(finish_plan):
        if step == 3:
            keys += [
                submit(i, {**w, "priority": w["priority"] + 2})
                for i, w in enumerate(workloads)
                if w["late"]
            ]
        before = world.admitted()
        for decision in world.cycle().decisions:
            if isinstance(decision, Admit):
                assert decision.key not in before
                event(f"admitted borrowing={decision.borrowing}")
                # kq's own admissions pass the test it puts others' to (kq.scheduler.trust).
                lq = world.queues.local_queues[f"ns/{world.workloads[decision.key].queue_name}"]
                cq = world.cache.cluster_queues[decision.admission.cluster_queue]
                workload = world.workloads[decision.key]
                assert distrust(workload, decision.admission, lq.cluster_queue, cq) is None
            if isinstance(decision, Preempt):
                event("preempted")  # shown by --hypothesis-show-statistics
                check_victims(world, decision)
                for victim in decision.victims:
                    world.complete_eviction(victim.key)
        check_quota(world)
        for key in world.admitted():
            cached = world.cache.workload(key)
            assert cached is not None
            if not world.workloads[key].pod_sets[0].tolerations:
                assert ("spot", "cpu") not in cached.info.usage
        admitted = sorted(world.admitted())
        if finish and admitted and step > 4:
            world.finish(admitted[step % len(admitted)])
        for key in keys:
            states = [
                key in world.finished,
                world.cache.holds_quota(key),
                any(q.contains(key) for q in world.queues.queues.values()),
            ]
            assert sum(states) == 1, (key, states)
