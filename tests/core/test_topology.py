"""Topology-aware admission: whole slices in healthy domains with room, and hot-swap plans."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kq.api.node import Node, parse_node
from kq.api.topology import Topology
from kq.cache.topology import placements_of
from kq.scheduler.cycle import CycleResult
from kq.scheduler.protocols import Recovery
from kq.workload.info import WorkloadInfo
from kq_plugins.hotswap import SliceHotSwap
from tests.core.world import World, pending

POOL = "cloud.google.com/gke-nodepool"
TPU = "google.com/tpu"
ACCEL = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}
EXCLUSIVE = {"alpha.jobset.sigs.k8s.io/exclusive-topology": POOL}


def node(
    name: str, pool: str, chips: int = 4, *, ready: bool = True, taints: Sequence[Any] = ()
) -> Node:
    parsed = parse_node(
        {
            "metadata": {"name": name, "labels": {POOL: pool, **ACCEL}},
            "spec": {"taints": list(taints)},
            "status": {
                "allocatable": {TPU: str(chips), "cpu": "8"},
                "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}],
            },
        }
    )
    assert isinstance(parsed, Node)
    return parsed


def slices_world(pools: int = 4, hosts: int = 4, quota: int = 64) -> World:
    world = World()
    world.flavor("tpu-v6e-slice", ACCEL)
    world.cluster_queue("tpu", [{"tpu-v6e-slice": {TPU: quota}}])
    world.local_queue("default", "q", "tpu")
    for p in range(1, pools + 1):
        for h in range(hosts):
            world.cache.set_node(f"p{p}-{h}", node(f"p{p}-{h}", f"pool-{p}"))
    return world


def jobset(
    world: World, name: str, priority: int = 0, replicas: int = 2, per_job: int = 4, **kw: Any
) -> str:
    """A JobSet's Workload as the job framework writes it: exclusive slices of ``per_job``."""
    pod_set = world.pod_set("slice", {TPU: kw.pop("chips", 4)}, replicas * per_job)
    pod_set["topologyRequest"] = {
        "podSetSliceRequiredTopology": POOL,
        "podSetSliceSize": per_job,
        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
        "subGroupCount": replicas,
    }
    annotations = EXCLUSIVE if kw.pop("exclusive", True) else {}
    return world.submit(
        name, "q", priority=priority, pod_sets=[pod_set], annotations=annotations, **kw
    )


def info(world: World, key: str) -> WorkloadInfo:
    cached = world.cache.workload(key)
    assert cached is not None
    return cached.info


def domains_of(world: World, key: str) -> list[str]:
    admission = info(world, key).obj.admission
    assert admission is not None
    assert admission.pod_set_assignments[0].topology is not None
    return [values[0] for values, _ in admission.pod_set_assignments[0].topology.domains]


def said(results: Sequence[CycleResult], key: str) -> str:
    """The last pending message a cycle gave ``key`` (parked workloads are not re-decided)."""
    found = [r for r in results if key in r.by_key]
    return pending(found[-1], key).message


def fail(world: World, name: str) -> None:
    pool = name.split("-")[0].replace("p", "pool-")
    world.cache.set_node(name, node(name, pool, ready=False))


def test_each_child_job_gets_a_whole_slice_and_quota_alone_is_not_capacity() -> None:
    world = slices_world()
    low, high = jobset(world, "low", 1), jobset(world, "high", 2)
    world.run(3)
    assert world.admitted() == {low, high}
    assert sorted(set(domains_of(world, high)) | set(domains_of(world, low))) == [
        "pool-1", "pool-2", "pool-3", "pool-4",
    ]  # fmt: skip
    for key in (low, high):
        assert len(set(domains_of(world, key))) == 2
        assert info(world, key).obj.admission.pod_set_assignments[0].topology.levels == (  # type: ignore[union-attr]
            POOL,
            "kubernetes.io/hostname",
        )
    # A third JobSet fits the quota of a bigger queue, but no healthy slice is left.
    world.cluster_queue("tpu", [{"tpu-v6e-slice": {TPU: 96}}])
    third = jobset(world, "third")
    message = said(world.run(2), third)
    assert message == (
        "insufficient healthy topology domains for pod set slice in flavor tpu-v6e-slice: "
        f"needs 2 {POOL} domain(s) with room for 4 pods each; 4 exist, 4 healthy, 0 free"
    )


def test_a_slice_with_a_failed_node_is_not_capacity_and_is_named() -> None:
    world = slices_world()
    fail(world, "p3-1")
    first, second = jobset(world, "first"), jobset(world, "second")
    results = world.run(3)
    assert world.admitted() == {first}
    assert "pool-3" not in domains_of(world, first)
    message = said(results, second)
    assert message.endswith("4 exist, 3 healthy, 1 free (not healthy: pool-3)")


def test_non_exclusive_slices_pack_by_capacity_and_exclusive_ones_do_not() -> None:
    world = slices_world(pools=1, hosts=4)
    a = jobset(world, "a", replicas=1, per_job=2, exclusive=False)
    b = jobset(world, "b", replicas=1, per_job=2, exclusive=False)
    world.run(3)
    assert world.admitted() == {a, b}
    world2 = slices_world(pools=1, hosts=4)
    c, d = jobset(world2, "c", replicas=1, per_job=2), jobset(world2, "d", replicas=1, per_job=2)
    world2.run(3)
    assert len(world2.admitted() & {c, d}) == 1


def test_a_topology_flavor_counts_capacity_without_a_request_and_checks_levels() -> None:
    world = slices_world(pools=1, hosts=2)
    world.cache.flavors["tpu-v6e-slice"] = world.cache.flavors["tpu-v6e-slice"].__class__(
        "tpu-v6e-slice", ACCEL, topology_name="slices"
    )
    plain = world.submit("plain", "q", {TPU: 4}, count=3)
    [result] = world.run(1)
    assert pending(result, plain).message == 'Topology "slices" of flavor tpu-v6e-slice not found'
    world.cache.set_topology("slices", Topology("slices", ("zone", "kubernetes.io/hostname")))
    world.requeue_all()
    [result] = world.run(1)
    assert "needs 1 node domain(s) with room for 3 pods each; 1 exist, 1 healthy, 0 free" in (
        pending(result, plain).message
    )
    js = jobset(world, "js", replicas=1, per_job=2)
    assert said(world.run(2), js) == (
        f'level "{POOL}" is not in Topology slices (levels: zone, kubernetes.io/hostname)'
    )


def test_untolerated_taints_and_missing_labels_say_why() -> None:
    world = slices_world(pools=1, hosts=4)
    taint = {"key": "maintenance", "value": "x", "effect": "NoSchedule"}
    for h in range(4):
        world.cache.set_node(f"p1-{h}", node(f"p1-{h}", "pool-1", taints=[taint]))
    key = jobset(world, "js", replicas=1)
    [result] = world.run(1)
    assert "1 exist, 0 healthy, 0 free (not healthy: pool-1)" in pending(result, key).message
    other = World()
    other.flavor("gpu", {"gpu": "a100"})
    other.cluster_queue("tpu", [{"gpu": {TPU: 64}}])
    other.local_queue("default", "q", "tpu")
    lonely = jobset(other, "lonely")
    [result] = other.run(1)
    assert pending(result, lonely).message.startswith(
        f"no node for pod set slice in flavor gpu has the topology label {POOL}"
    )


def test_hot_swap_takes_a_free_slice_first_and_evicts_nothing() -> None:
    world = slices_world()
    low = jobset(world, "low", 1)
    world.run(2)
    failed_node = f"p{domains_of(world, low)[0][-1]}-2"
    fail(world, failed_node)
    plan = SliceHotSwap().recover(
        world.cache.snapshot(), info(world, low), frozenset({failed_node})
    )
    assert isinstance(plan, Recovery)
    assert plan.victims == ()
    [assignment] = plan.topology.values()
    new = [values[0] for values, _ in assignment.domains]
    old = domains_of(world, low)
    assert new[4:] == old[4:]
    assert new[0] not in old


def test_hot_swap_evicts_the_lowest_priority_and_never_an_equal_one() -> None:
    world = slices_world()
    low, high = jobset(world, "low", 1), jobset(world, "high", 2)
    world.run(3)
    failed_node = f"p{domains_of(world, high)[0][-1]}-0"
    fail(world, failed_node)
    snapshot = world.cache.snapshot()
    plan = SliceHotSwap().recover(snapshot, info(world, high), frozenset({failed_node}))
    assert isinstance(plan, Recovery)
    assert [t.workload.key for t in plan.victims] == [low]
    assert plan.victims[0].reason == "HotSwap"
    assert f"recovering workload {high} after the failure of pool-" in plan.victims[0].description
    # low cannot take high's slices back: equal or higher priority is never a victim
    failed_low = f"p{domains_of(world, low)[0][-1]}-0"
    fail(world, failed_low)
    answer = SliceHotSwap().recover(
        world.cache.snapshot(), info(world, low), frozenset({failed_node, failed_low})
    )
    assert isinstance(answer, str)
    assert answer.endswith(
        "needs 1 cloud.google.com/gke-nodepool domain(s) with room for 4 pods each; "
        "4 exist, 2 healthy, 0 free (not healthy: pool-1, pool-3)"
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 3), st.integers(1, 2), st.integers(1, 3), st.booleans()),
        min_size=1,
        max_size=8,
    ),
    st.sets(st.sampled_from([f"p{p}-{h}" for p in range(1, 5) for h in range(3)]), max_size=3),
)
def test_admitted_usage_never_exceeds_healthy_capacity(
    jobs: list[tuple[int, int, int, bool]], failed: set[str]
) -> None:
    world = slices_world(pools=4, hosts=3, quota=1000)
    for name in failed:
        fail(world, name)
    for i, (replicas, per_job, chips, exclusive) in enumerate(jobs):
        jobset(world, f"j{i}", i % 3, replicas, per_job, chips=chips, exclusive=exclusive)
    world.run(4)
    used: dict[str, int] = {}
    owners: dict[str, set[str]] = {}
    for key in world.admitted():
        for node_name, usage in placements_of(info(world, key)).items():
            assert node_name not in failed
            used[node_name] = used.get(node_name, 0) + usage.get(TPU, 0)
            owners.setdefault(node_name.split("-")[0], set()).add(key)
    assert all(amount <= 4 for amount in used.values())
    for key in world.admitted():
        if world.workloads[key].pod_sets[0].topology.exclusive:  # type: ignore[union-attr]
            for pool in {n.split("-")[0] for n in placements_of(info(world, key))}:
                assert owners[pool] == {key}
