"""S4: two teams sharing the cohort ``researchers`` (expectations 1-6)."""

from __future__ import annotations

from typing import Any

import pytest

from kq.scheduler.decisions import Admit
from kq.scheduler.status import cluster_queue_status
from tests.core.world import Quota, World, pending, preempt

SPOT_TAINT = {"key": "spot", "value": "true", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
GPU = "nvidia.com/gpu"
A100 = {"gpu-model": "a100"}


def s4_world(
    a_cpu: Quota = 10,
    b_cpu: Quota = 10,
    *,
    a_spot: Quota = 10,
    strategy: str = "BestEffortFIFO",
    a_spec: dict[str, Any] | None = None,
    a_annotations: dict[str, str] | None = None,
) -> World:
    world = World()
    world.flavor("on-demand")
    world.flavor("spot", {"cloud.google.com/gke-spot": "true"}, [SPOT_TAINT])
    world.flavor("a100", A100)
    world.flavor("h100", {"gpu-model": "h100"})
    for name, cpu, spot, gpus, spec, notes in (
        ("team-a-cq", a_cpu, a_spot, {"a100": 0, "h100": 4}, a_spec or {}, a_annotations),
        ("team-b-cq", b_cpu, 10, {"a100": 2, "h100": 0}, {}, None),
    ):
        world.cluster_queue(
            name,
            [
                {
                    "on-demand": {"cpu": cpu, "memory": "64Gi"},
                    "spot": {"cpu": spot, "memory": "64Gi"},
                },
                {flavor: {GPU: n} for flavor, n in gpus.items()},
            ],
            cohort="researchers",
            annotations=notes,
            queueingStrategy=strategy,
            **spec,
        )
    world.local_queue("team-a", "team-a", "team-a-cq")
    world.local_queue("team-b", "team-b", "team-b-cq")
    return world


def submit(world: World, team: str, name: str, cpu: int, **kw: Any) -> str:
    return world.submit(name, team, {"cpu": cpu, "memory": "1Gi"}, namespace=team, **kw)


def test_1_borrow_same_flavor_up_to_borrowing_limit() -> None:
    world = s4_world(b_cpu=(10, 4, None))
    own = submit(world, "team-b", "own", 10)
    borrower = submit(world, "team-b", "borrower", 4)
    over = submit(world, "team-b", "over", 1)
    results = world.run(3)
    assert world.admission(borrower) == {"main": {"cpu": "on-demand", "memory": "on-demand"}}
    assert world.admitted() == {own, borrower}
    status = cluster_queue_status(world.cache, world.queues, "team-b-cq")
    cpu = status["flavorsReservation"][0]["resources"][0]
    assert cpu == {"name": "cpu", "total": "14", "borrowed": "4"}
    message = pending(results[2], over).message
    assert "insufficient unused quota for cpu in flavor on-demand, 1 more needed" in message
    assert "untolerated taint spot=true:NoSchedule in flavor spot" in message


def test_1_never_h100_in_place_of_a100() -> None:
    world = s4_world()
    key = world.submit("a100-job", "team-b", {GPU: 3}, namespace="team-b", node_selector=A100)
    message = pending(world.cycle(), key).message
    assert message == (
        "couldn't assign flavors to pod set main: flavor h100 doesn't match node affinity, "
        "insufficient quota for nvidia.com/gpu in flavor a100, previously considered podsets "
        "requests (0) + current podset request (3) > maximum capacity (2)"
    )


def test_2_lending_limit_caps_what_a_lends() -> None:
    world = s4_world(a_cpu=(10, None, 2))
    big = submit(world, "team-b", "big", 12)
    too_big = submit(world, "team-b", "too-big", 13)
    world.run(2)
    assert big in world.admitted()
    assert too_big not in world.admitted()


@pytest.mark.parametrize("reclaim", ["Any", "Never"])
def test_3_reclaim_any_preempts_borrowers_never_waits(reclaim: str) -> None:
    world = s4_world(a_spec={"preemption": {"reclaimWithinCohort": reclaim}})
    b_own = submit(world, "team-b", "b-own", 10, priority=10)
    b_old = submit(world, "team-b", "b-old", 3, priority=5)
    b_new = submit(world, "team-b", "b-new", 3, priority=5)
    b_high = submit(world, "team-b", "b-high", 3, priority=50)
    world.run(4)
    assert world.admitted() == {b_own, b_old, b_new, b_high}
    a_job = submit(world, "team-a", "a-job", 5)
    result = world.cycle()
    if reclaim == "Never":
        assert "insufficient unused quota for cpu in flavor on-demand, 4 more needed" in (
            pending(result, a_job).message
        )
        world.finish(b_high)
        world.finish(b_new)
        assert isinstance(world.cycle().by_key[a_job], Admit)
        return
    decision = preempt(result, a_job)
    # Fewest victims: lowest priority first, the newest of equals first, the rest given back.
    assert [(v.key, v.reason) for v in decision.victims] == [
        (b_new, "InCohortReclamation"),
        (b_old, "InCohortReclamation"),
    ]
    for victim in decision.victims:
        world.complete_eviction(victim.key)
    assert isinstance(world.cycle().by_key[a_job], Admit)


def test_4_untolerated_spot_is_never_assigned() -> None:
    world = s4_world(a_cpu=4, b_cpu=0)
    full = submit(world, "team-a", "full", 4)
    untolerating = submit(world, "team-a", "no-toleration", 2)
    tolerating = submit(world, "team-a", "toleration", 2, tolerations=[SPOT_TOLERATION])
    results = world.run(3)
    assert world.admitted() == {full, tolerating}
    message = pending(results[1], untolerating).message
    assert "untolerated taint spot=true:NoSchedule in flavor spot" in message
    assert world.admission(tolerating)["main"]["cpu"] == "spot"


@pytest.mark.parametrize(
    ("strategy", "cpu_admitted"), [("StrictFIFO", False), ("BestEffortFIFO", True)]
)
def test_5_strict_fifo_head_blocks_best_effort_does_not(strategy: str, cpu_admitted: bool) -> None:
    world = s4_world(strategy=strategy)
    holder = world.submit("holder", "team-a", {GPU: 4}, namespace="team-a")
    world.cycle()
    head = world.submit("gpu-head", "team-a", {GPU: 4}, namespace="team-a", priority=10)
    cpu_only = submit(world, "team-a", "cpu-only", 1)
    world.run(3)
    assert (cpu_only in world.admitted()) is cpu_admitted
    world.finish(holder)
    world.run(3)
    assert head in world.admitted()
    assert cpu_only in world.admitted()


@pytest.mark.parametrize(
    ("assigner", "flavor"), [("InOrder", "on-demand"), ("MinimizeBorrowing", "spot")]
)
def test_6_in_order_borrows_first_minimize_borrowing_takes_spot(assigner: str, flavor: str) -> None:
    world = s4_world(a_cpu=4, a_annotations={"kq.dev/flavor-assignment": assigner})
    job = submit(world, "team-a", "job", 6, tolerations=[SPOT_TOLERATION])
    decision = world.cycle().by_key[job]
    assert isinstance(decision, Admit)
    assert decision.borrowing is (flavor == "on-demand")
    assert world.admission(job)["main"] == {"cpu": flavor, "memory": flavor}
