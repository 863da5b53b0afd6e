"""Fair sharing on the pure core: shares, admission order by share, preemption by strategy."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import event, given, settings
from hypothesis import strategies as st

from kq.api.quotas import FlavorResource
from kq.cache.fair_share import compare, dominant_resource_share
from kq.scheduler.decisions import Admit, Preempt
from tests.core.world import World, plugins

BOTH = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


def fair_world(strategies: tuple[str, ...] = BOTH) -> World:
    world = World()
    world.scheduler.plugins = dataclasses.replace(plugins(), fair_sharing=strategies)
    world.flavor("default")
    return world


def share(world: World, cq: str) -> float:
    drs = world.cache.fair_share(cq)
    assert drs is not None
    return drs.share()


def test_a_queue_over_its_quota_has_the_share_of_its_dominant_resource() -> None:
    """Kueue's example: cpu 3 of 2 and gpu 7 of 5, beside a lender of 8 cpu and 5 gpu."""
    world = fair_world()
    for name, cpu, gpu in (("cq", 2, 5), ("lending-cq", 8, 5)):
        world.cluster_queue(name, [{"default": {"cpu": cpu, "example.com/gpu": gpu}}], "cohort")
        world.local_queue("default", name, name)
    world.submit("wl", "cq", {"cpu": 3, "example.com/gpu": 7})
    world.run(1)
    drs = world.cache.fair_share("cq")
    assert drs is not None
    assert (drs.ratio, drs.resource, drs.rounded()) == (200.0, "example.com/gpu", 200)
    assert share(world, "lending-cq") == 0.0
    tree = world.cache.tree()
    cohort = dominant_resource_share(world.cache._usage, tree.cohorts["cohort"])
    assert cohort.rounded() == 0  # a root cohort has no share


def test_weights_divide_the_share_and_a_borrowing_zero_weight_is_infinite() -> None:
    world = fair_world()
    world.cluster_queue("half", [{"default": {"cpu": 2}}], "c", fairSharing={"weight": "0.5"})
    world.cluster_queue("zero", [{"default": {"cpu": 2}}], "c", fairSharing={"weight": "0"})
    world.cluster_queue("lender", [{"default": {"cpu": 6}}], "c")
    for name in ("half", "zero"):
        world.local_queue("default", name, name)
        world.submit(f"{name}-wl", name, {"cpu": 3})
    world.run(3)
    assert share(world, "half") == 1 * 1000 / 10 / 0.5
    assert math.isinf(share(world, "zero"))
    zero = world.cache.fair_share("zero")
    assert zero is not None
    assert zero.rounded() == 2**63 - 1
    half = world.cache.fair_share("half")
    assert half is not None
    assert compare(half, zero) < 0


def test_the_queue_with_the_lower_share_after_admission_goes_first() -> None:
    """Classic order takes the higher priority; fair sharing the lower share."""
    for fair in (True, False):
        _lower_share_first(fair)


def _lower_share_first(fair: bool) -> None:
    world = fair_world()
    if not fair:
        world.scheduler.plugins = plugins()
    for name in ("a", "b"):
        world.cluster_queue(name, [{"default": {"cpu": 4}}], "cohort")
        world.local_queue("default", name, name)
    world.cluster_queue("lender", [{"default": {"cpu": 4}}], "cohort")
    world.submit("a-old", "a", {"cpu": 6})
    world.submit("b-old", "b", {"cpu": 4})
    world.run(2)
    assert world.admitted() == {"default/a-old", "default/b-old"}
    a_new = world.submit("a-new", "a", {"cpu": 2}, priority=100)
    b_new = world.submit("b-new", "b", {"cpu": 2}, priority=0)
    [result] = world.run(1)
    first, second = (b_new, a_new) if fair else (a_new, b_new)
    assert isinstance(result.by_key[first], Admit)  # b ends at 2/12 borrowed, a would at 4/12
    assert not isinstance(result.by_key[second], Admit)


def test_a_queue_within_its_nominal_reclaims_from_the_most_borrowing_one() -> None:
    """Within its nominal quota, b reclaims whatever the shares (FairSharingPreemptWithinNominal);
    a preemptor that would borrow goes by the shares: see test_fair_refinements.py."""
    world = fair_world()
    reclaim = {"reclaimWithinCohort": "Any"}
    for name in ("a", "b"):
        world.cluster_queue(name, [{"default": {"cpu": 4}}], "cohort", preemption=reclaim)
        world.local_queue("default", name, name)
    for i in range(8):
        world.submit(f"a-{i}", "a", {"cpu": 1})
    world.run(10)
    assert len(world.admitted()) == 8  # a borrows all of b's quota
    b1 = world.submit("b-1", "b", {"cpu": 2})
    [result] = world.run(1)
    decision = result.by_key[b1]
    assert isinstance(decision, Preempt)
    assert [v.reason for v in decision.victims] == ["InCohortReclamation"] * 2
    assert "due to reclamation within the cohort" in decision.victims[0].message


def test_less_than_initial_share_alone_stops_before_the_shares_cross() -> None:
    """a borrows 2; b needs 2 more than nominal: b's share would pass a's, so no preemption."""
    world = fair_world(("LessThanInitialShare",))
    reclaim = {"reclaimWithinCohort": "Any"}
    for name in ("a", "b"):
        world.cluster_queue(name, [{"default": {"cpu": 4}}], "cohort", preemption=reclaim)
        world.local_queue("default", name, name)
    world.cluster_queue("lender", [{"default": {"cpu": 2}}], "cohort")
    world.submit("a-big", "a", {"cpu": 6})
    world.submit("b-big", "b", {"cpu": 4})
    world.run(2)
    b2 = world.submit("b-more", "b", {"cpu": 2})
    [result] = world.run(1)
    assert not isinstance(result.by_key[b2], Preempt | Admit)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3), st.integers(0, 2)), max_size=10),
    st.lists(st.sampled_from(["1", "2", "0.5", "0"]), min_size=3, max_size=3),
)
def test_no_preemption_lifts_the_preemptor_above_its_victims_final_share(
    jobs: list[tuple[int, int, int]], weights: list[str]
) -> None:
    world = fair_world(("LessThanOrEqualToFinalShare",))
    names = ("q0", "q1", "q2")
    for name, weight in zip(names, weights, strict=True):
        world.cluster_queue(name, [{"default": {"cpu": 3}}], "cohort",
                            preemption={"reclaimWithinCohort": "Any"},
                            fairSharing={"weight": weight})  # fmt: skip
        world.local_queue("default", name, name)
    for i, (queue, cpu, priority) in enumerate(jobs):
        world.submit(f"w{i}", names[queue], {"cpu": cpu}, priority=priority)
        for result in world.run(1):
            for decision in result.decisions:
                if isinstance(decision, Preempt):
                    event("preempted")  # shown by --hypothesis-show-statistics
                    _check_fair(world, decision)


def _check_fair(world: World, decision: Preempt) -> None:
    """Once its victims are gone and it is admitted, the preemptor's queue has a share no
    higher than any victim's queue (all are children of the root: their own almost-LCAs)."""
    snapshot = world.cache.snapshot()
    cq = snapshot.cluster_queues[decision.cluster_queue]
    victims = [world.cache.workload(v.key) for v in decision.victims]
    for cached in victims:
        assert cached is not None
        snapshot.remove_workload(cached.info)
    workload = world.workloads[decision.key]
    usage: dict[FlavorResource, int] = {
        ("default", "cpu"): sum(ps.requests["cpu"] * ps.count for ps in workload.pod_sets)
    }
    snapshot.add_usage(cq, usage)
    mine = dominant_resource_share(snapshot.usage, cq.node)
    for cached in victims:
        assert cached is not None
        theirs = snapshot.cluster_queues[cached.info.cluster_queue]
        if theirs is not cq:
            assert compare(mine, dominant_resource_share(snapshot.usage, theirs.node)) <= 0


def test_the_second_strategy_evicts_from_a_zero_weight_queue_the_first_refuses() -> None:
    """o would end at 500, above zero's 0 after the eviction (S2-a refuses); zero's share
    before it is infinite, so S2-b allows it."""
    world = fair_world()
    reclaim = {"reclaimWithinCohort": "Any"}
    world.cluster_queue("zero", [{"default": {"cpu": 1}}], "c", preemption=reclaim,
                        fairSharing={"weight": "0"})  # fmt: skip
    world.cluster_queue("one", [{"default": {"cpu": 1}}], "c", preemption=reclaim)
    world.cluster_queue("lender", [{"default": {"cpu": 2}}], "c")
    world.local_queue("default", "qz", "zero")
    world.local_queue("default", "qo", "one")
    z = world.submit("z", "qz", {"cpu": 2})
    world.run(2)
    o = world.submit("o", "qo", {"cpu": 3})
    [result] = world.run(1)
    decision = result.by_key[o]
    assert isinstance(decision, Preempt)
    assert [(v.key, v.reason) for v in decision.victims] == [(z, "InCohortFairSharing")]
    only_final = fair_world(("LessThanOrEqualToFinalShare",))
    only_final.cluster_queue("zero", [{"default": {"cpu": 1}}], "c", preemption=reclaim,
                             fairSharing={"weight": "0"})  # fmt: skip
    only_final.cluster_queue("one", [{"default": {"cpu": 1}}], "c", preemption=reclaim)
    only_final.cluster_queue("lender", [{"default": {"cpu": 2}}], "c")
    only_final.local_queue("default", "qz", "zero")
    only_final.local_queue("default", "qo", "one")
    only_final.submit("z", "qz", {"cpu": 2})
    only_final.run(2)
    o = only_final.submit("o", "qo", {"cpu": 3})
    [result] = only_final.run(1)
    assert not isinstance(result.by_key[o], Preempt)


def test_a_child_cohort_borrowing_from_its_parent_has_a_share() -> None:
    world = fair_world()
    world.cohort("c1", parent="root")
    world.cohort("c2", parent="root")
    world.cluster_queue("a", [{"default": {"cpu": 4}}], "c1")
    world.cluster_queue("b", [{"default": {"cpu": 4}}], "c1")
    world.cluster_queue("lender", [{"default": {"cpu": 8}}], "c2")
    world.local_queue("default", "qa", "a")
    world.submit("big", "qa", {"cpu": 12})
    world.run(2)
    c1 = world.cache.cohort_share("c1")
    assert c1 is not None
    assert c1.rounded() == 250  # 4 over its 8, per 1000 of the 16 the root can lend
    assert share(world, "a") == 8 * 1000 / 16
    root = world.cache.cohort_share("root")
    assert root is not None
    assert root.rounded() == 0
