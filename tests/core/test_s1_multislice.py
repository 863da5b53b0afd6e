"""S1: three multislice TPU JobSets on one 24-chip ClusterQueue."""

from __future__ import annotations

from typing import Any

from kq.scheduler.decisions import Admit
from kq.scheduler.status import cluster_queue_status
from tests.core.world import World, pending, preempt

TPU = "google.com/tpu"
LABELS = {
    "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
    "cloud.google.com/gke-tpu-topology": "2x4",
}


def s1_world(**preemption: str) -> World:
    world = World()
    world.flavor("vlp-24", LABELS)
    spec: dict[str, Any] = {"preemption": preemption} if preemption else {}
    world.cluster_queue("cluster-queue", [{"vlp-24": {TPU: 24}}], **spec)
    world.local_queue("default", "multislice-queue", "cluster-queue")
    return world


def jobset(world: World, name: str, slices: int, priority: int = 0) -> str:
    return world.submit(
        name,
        "multislice-queue",
        {TPU: 4},
        count=2 * slices,
        priority=priority,
        node_selector=LABELS,
    )


def usage(world: World) -> str:
    status = cluster_queue_status(world.cache, world.queues, "cluster-queue")
    return str(status["flavorsReservation"][0]["resources"][0]["total"])


def test_story_three_then_one_and_two_on_the_next_pass() -> None:
    world = s1_world()
    three = jobset(world, "jobset-multislice-3slice", 3)
    one = jobset(world, "jobset-multislice-1slice", 1)
    two = jobset(world, "jobset-multislice-2slice", 2)

    first = world.cycle()
    admit = first.by_key[three]
    assert isinstance(admit, Admit)
    (psa,) = admit.admission.pod_set_assignments
    assert (psa.flavors, psa.resource_usage, psa.count) == ({TPU: "vlp-24"}, {TPU: 96 // 4}, 6)
    assert usage(world) == "24"

    results = world.run(2)
    messages = {pending(r, k).message for r in results for k in (one, two) if k in r.by_key}
    assert messages == {
        "couldn't assign flavors to pod set main: insufficient unused quota for google.com/tpu "
        "in flavor vlp-24, 8 more needed",
        "couldn't assign flavors to pod set main: insufficient unused quota for google.com/tpu "
        "in flavor vlp-24, 16 more needed",
    }
    assert world.admitted() == {three}
    status = cluster_queue_status(world.cache, world.queues, "cluster-queue")
    assert (status["pendingWorkloads"], status["reservingWorkloads"]) == (2, 1)
    assert world.cycle().decisions == ()  # both parked: BestEffortFIFO waits for an event

    world.finish(three)
    assert usage(world) == "0"
    # One head per ClusterQueue per cycle: back-to-back cycles, no further event needed.
    first_pass, second_pass = world.run(2)
    assert isinstance(first_pass.by_key[one], Admit)
    assert isinstance(second_pass.by_key[two], Admit)
    assert usage(world) == "24"
    status = cluster_queue_status(world.cache, world.queues, "cluster-queue")
    assert (status["pendingWorkloads"], status["admittedWorkloads"]) == (0, 2)


def test_preemption_variant_evicts_lower_priority_only() -> None:
    world = s1_world(reclaimWithinCohort="Any", withinClusterQueue="LowerPriority")
    low = jobset(world, "jobset-low-priority", 1, priority=100)
    filler = jobset(world, "jobset-filler", 2, priority=100)
    world.run(2)
    assert world.admitted() == {low, filler}

    equal = jobset(world, "jobset-equal", 1, priority=100)
    result = world.cycle()
    assert "8 more needed" in pending(result, equal).message
    assert world.admitted() == {low, filler}

    high = jobset(world, "jobset-high", 1, priority=1000)
    decision = preempt(world.cycle(), high)
    (victim,) = decision.victims
    assert victim.reason == "InClusterQueue"
    assert victim.message.startswith("Preempted to accommodate a workload (UID: ")
    assert victim.message.endswith(
        "due to prioritization in the ClusterQueue; preemptor path: /cluster-queue; "
        "preemptee path: /cluster-queue"
    )
    assert decision.message.endswith(". Pending the preemption of 1 workload(s)")

    world.complete_eviction(victim.key)
    assert isinstance(world.cycle().by_key[high], Admit)
    assert high in world.admitted()
    assert victim.key not in world.admitted()
