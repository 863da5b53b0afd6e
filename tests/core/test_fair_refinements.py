"""Kueue's two fair-sharing refinements, on by default since v0.17 and always on in kq:
FairSharingPreemptWithinNominal (a queue within its nominal quota reclaims whatever the shares,
reason ``InCohortReclamation``) and FairSharingPrioritizeNonBorrowing (the tournament prefers a
child not borrowing what the entry requests). Cases from Kueue's ``TestFairPreemptions``."""

from __future__ import annotations

import dataclasses

import pytest

from kq.config import ConfigError
from kq.config_file import parse_config
from kq.scheduler.decisions import Admit, Preempt
from tests.core.world import World, plugins

BOTH = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
POLICY = {
    "withinClusterQueue": "LowerPriority",
    "reclaimWithinCohort": "Any",
    "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": -3},
}


def base_world(admitted: dict[str, int]) -> World:
    """a, b, c of 3 cpu each and a 0-cpu "preemptible", with 1-cpu workloads admitted."""
    world = World()
    world.scheduler.plugins = dataclasses.replace(plugins(), fair_sharing=BOTH)
    world.flavor("default")
    for name in ("a", "b", "c"):
        world.cluster_queue(name, [{"default": {"cpu": 3}}], "all", preemption=POLICY)
        world.local_queue("default", name, name)
    world.cluster_queue("preemptible", [{"default": {"cpu": 0}}], "all")
    for queue, count in admitted.items():
        for i in range(1, count + 1):
            world.submit(f"{queue}{i}", queue, {"cpu": 1})
    world.run(12)
    assert len(world.admitted()) == sum(admitted.values())
    return world


def victims(world: World, queue: str, cpu: int = 1) -> list[tuple[str, str]]:
    key = world.submit(f"{queue}_incoming", queue, {"cpu": cpu})
    [result] = world.run(1)
    decision = result.by_key[key]
    if not isinstance(decision, Preempt):
        return []
    return [(v.key.removeprefix("default/")[0], v.reason) for v in decision.victims]


def test_a_queue_within_nominal_reclaims_from_the_one_using_the_most() -> None:
    world = base_world({"a": 3, "b": 5, "c": 1})
    assert victims(world, "c") == [("b", "InCohortReclamation")]


def test_a_queue_that_would_borrow_preempts_by_fair_sharing() -> None:
    world = base_world({"a": 3, "b": 5, "c": 1})
    key = world.submit("a_incoming", "a", {"cpu": 1})
    [result] = world.run(1)
    decision = result.by_key[key]
    assert isinstance(decision, Preempt)
    [victim] = decision.victims
    assert (victim.key[len("default/")], victim.reason) == ("b", "InCohortFairSharing")
    assert "due to Fair Sharing within the cohort" in victim.message


def test_nobody_is_preempted_when_everyone_is_under_nominal() -> None:
    world = base_world({"a": 3, "b": 3, "c": 3})
    assert victims(world, "c") == []


def test_nobody_is_preempted_when_it_would_switch_the_imbalance() -> None:
    world = base_world({"a": 3, "b": 5})
    assert victims(world, "a", cpu=2) == []


def test_the_tournament_prefers_the_queue_not_borrowing_what_it_asks_for() -> None:
    """a borrows 6 spot (share 600) and asks for 4 on-demand within its nominal; b would borrow
    3 on-demand (share 300). By shares b goes first; a's entry borrows nothing it asks for, so
    it wins, and b no longer fits."""
    world = World()
    world.scheduler.plugins = dataclasses.replace(plugins(), fair_sharing=BOTH)
    world.flavor("od", {"type": "od"})
    world.flavor("spot", {"type": "spot"})
    for name, od, spot in (("a", 4, 0), ("b", 4, 0), ("lender", 2, 10)):
        world.cluster_queue(name, [{"od": {"cpu": od}, "spot": {"cpu": spot}}], "all")
        world.local_queue("default", name, name)
    world.submit("a-spot", "a", {"cpu": 6}, node_selector={"type": "spot"})
    world.run(2)
    assert world.admitted() == {"default/a-spot"}
    world.submit("b-od", "b", {"cpu": 7}, node_selector={"type": "od"})
    world.submit("a-od", "a", {"cpu": 4}, node_selector={"type": "od"})
    [result] = world.run(1)
    assert isinstance(result.by_key["default/a-od"], Admit)
    assert not isinstance(result.by_key["default/b-od"], Admit)


@pytest.mark.parametrize(
    "gate",
    [
        "FairSharingPreemptWithinNominal",
        "FairSharingPrioritizeNonBorrowing",
        "PrioritizePreemptorWorkloads",
    ],
)
def test_turning_a_refinement_off_is_refused(gate: str) -> None:
    assert parse_config({"featureGates": {gate: True}}).feature_gates == {gate: True}
    with pytest.raises(ConfigError, match=f"featureGates.{gate}: kq always behaves as {gate}=true"):
        parse_config({"featureGates": {gate: False}})
