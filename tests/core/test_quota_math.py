"""Semantics §2: lending limits, borrowing limits and hierarchical cohorts."""

from __future__ import annotations

from tests.core.world import World


def available(world: World, cq: str, fr: tuple[str, str]) -> int:
    snapshot = world.cache.snapshot()
    return snapshot.available(snapshot.cluster_queues[cq], fr)


def test_flat_cohort_with_lending_limits() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("a", [{"f": {"cpu": (5, None, 1)}}], cohort="c")
    world.cluster_queue("b", [{"f": {"cpu": (5, None, 4)}}], cohort="c")
    assert available(world, "a", ("f", "cpu")) == 9000
    assert available(world, "b", ("f", "cpu")) == 6000


def test_borrowing_limit_caps_what_a_queue_draws() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("a", [{"f": {"cpu": (5, 2, None)}}], cohort="c")
    world.cluster_queue("b", [{"f": {"cpu": 10}}], cohort="c")
    assert available(world, "a", ("f", "cpu")) == 7000
    assert available(world, "b", ("f", "cpu")) == 15000


def test_hierarchical_lender_exposes_only_what_it_lends() -> None:
    world = World()
    world.flavor("f")
    world.cohort("root")
    world.cohort("lender", "root", [{"f": {"cpu": ("1", None, "500m")}}])
    world.cohort("borrower", "root")
    world.cluster_queue("lender-cq", [{"f": {"cpu": 1}}], cohort="lender")
    world.cluster_queue("borrower-cq", [{"f": {"cpu": 0}}], cohort="borrower")
    world.local_queue("default", "q", "borrower-cq")
    assert available(world, "borrower-cq", ("f", "cpu")) == 500
    first = world.submit("first", "q", {"cpu": "500m"})
    second = world.submit("second", "q", {"cpu": "500m"})
    world.run(2)
    assert world.admitted() == {first}
    assert second not in world.admitted()


def test_usage_bubbles_past_local_quota_and_release_is_symmetric() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("a", [{"f": {"cpu": (4, None, 2)}}], cohort="c")
    world.cluster_queue("b", [{"f": {"cpu": 4}}], cohort="c")
    world.local_queue("default", "qa", "a")
    key = world.submit("w", "qa", {"cpu": 5})
    world.cycle()
    assert available(world, "b", ("f", "cpu")) == 3000  # 6 lendable in cohort, 3 taken
    world.finish(key)
    assert available(world, "b", ("f", "cpu")) == 6000
    assert available(world, "a", ("f", "cpu")) == 8000


def test_cohort_cycle_disables_its_queues() -> None:
    world = World()
    world.flavor("f")
    world.cohort("x", "y")
    world.cohort("y", "x")
    world.cluster_queue("a", [{"f": {"cpu": 1}}], cohort="x")
    assert world.cache.inactive_reason("a") == (
        "Unknown",
        "Can't admit new workloads: is in a cohort tree with a cycle.",
    )
