"""The scenario manifests under examples/ parse, and the core tells their stories."""

from __future__ import annotations

from pathlib import Path

from kq.scheduler.decisions import Admit
from tests.core.world import World, pending

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
S4 = EXAMPLES / "s4"
TPU_LABELS = {
    "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
    "cloud.google.com/gke-tpu-topology": "2x4",
}
SPOT = [{"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]


def test_s1_manifest_admits_three_slices_and_holds_the_rest() -> None:
    world = World()
    world.apply(EXAMPLES / "s1" / "kueue.yaml")

    def jobset(name: str, slices: int) -> str:
        return world.submit(
            name,
            "multislice-queue",
            {"google.com/tpu": 4},
            count=2 * slices,
            node_selector=TPU_LABELS,
        )

    three, one = jobset("multislice-3slice", 3), jobset("multislice-1slice", 1)
    assert isinstance(world.cycle().by_key[three], Admit)
    assert pending(world.cycle(), one).message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for google.com/tpu "
        "in flavor vlp-24, 8 more needed"
    )


def s4_world(*variants: str) -> World:
    world = World()
    for name in ("flavors.yaml", "cluster-queues.yaml", "local-queues.yaml"):
        world.apply(S4 / name)
    for variant in variants:
        world.apply(S4 / "variants" / variant)
    return world


def test_s4_team_b_borrows_on_demand_up_to_its_limit() -> None:
    world = s4_world()
    own = world.submit("own", "team-b", {"cpu": 6}, namespace="team-b")
    borrowed = world.submit("borrowed", "team-b", {"cpu": 4}, namespace="team-b")
    over = world.submit("over", "team-b", {"cpu": 1}, namespace="team-b")
    results = world.run(3)
    assert world.admitted() == {own, borrowed}
    assert world.admission(borrowed) == {"main": {"cpu": "on-demand"}}
    assert (
        "untolerated taint spot=true:NoSchedule in flavor spot" in pending(results[2], over).message
    )


def test_s4_minimize_borrowing_variant_takes_spot_before_borrowing() -> None:
    for variants, flavor in (((), "on-demand"), (("team-a-cq-minimize-borrowing.yaml",), "spot")):
        world = s4_world(*variants)
        world.submit("first", "team-a", {"cpu": 5}, namespace="team-a")
        world.cycle()
        second = world.submit("second", "team-a", {"cpu": 8}, namespace="team-a", tolerations=SPOT)
        world.cycle()
        assert world.admission(second) == {"main": {"cpu": flavor}}
