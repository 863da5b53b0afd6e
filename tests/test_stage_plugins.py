"""Third-party pipeline stages chosen per ClusterQueue, through ``kq run``, on both backends.

``examples/kq-plugin-stages`` registers a flavor assigner, a preemption policy and a queueing
strategy through the same hooks as the built-ins; ClusterQueues choose them by annotation, and
a name nobody registered makes the ClusterQueue inactive, saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import CLUSTER_QUEUES, EVENTS, NODES, WORKLOADS
from tests.controllers.helpers import (
    WPC_SOURCE,
    apply,
    cluster_queue,
    condition,
    eventually,
    finish,
    flavor,
    is_true,
    local_queue,
    namespace,
    priority_class,
    suffix,
    workload,
    workload_until,
)
from tests.controllers.topology import (
    flavor_labels,
    make_node,
    pools_of,
    set_ready,
    sliced_workload,
)
from tests.harness import REPO, Cluster, present
from tests.kqrun import install_plugin, kq_run

STAGES = REPO / "examples" / "kq-plugin-stages"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def running(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    site = install_plugin(STAGES, tmp_path_factory.mktemp("stages-site"))
    workdir = tmp_path_factory.mktemp("kq-run")
    ns = f"kq-system-{suffix()}"
    apply(cluster, workdir / "cache", namespace(ns))
    with kq_run(cluster, workdir, ns, pythonpath=site) as log:
        yield log


def two_flavor_queue(name: str, flavors: tuple[str, str], cpu: int, **extra: Any) -> dict[str, Any]:
    annotations = extra.pop("annotations", {})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{
                "coveredResources": ["cpu"],
                "flavors": [{"name": f, "resources": [{"name": "cpu", "nominalQuota": cpu}]}
                            for f in flavors],
            }],
            **extra,
        },
    }  # fmt: skip


def world(cluster: Cluster, tmp: Path, **extra: Any) -> tuple[str, str]:
    ident = suffix()
    ns, cq = f"stages-{ident}", f"cq-{ident}"
    flavors = (f"first-{ident}", f"last-{ident}")
    apply(cluster, tmp / "cache", namespace(ns), flavor(flavors[0]), flavor(flavors[1]),
          two_flavor_queue(cq, flavors, 1, **extra), local_queue(ns, "lq", cq))  # fmt: skip
    return ns, ident


async def test_a_queue_chooses_a_third_party_flavor_assigner(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ns, ident = world(cluster, tmp_path, annotations={"kq.dev/flavor-assignment": "LastFit"})
    apply(cluster, tmp_path / "cache", workload(ns, "wl", "lq", {"cpu": 1}))
    obj = await workload_until(client, ns, "wl", "admitted", lambda o: is_true(o, "Admitted"))
    flavors = obj["status"]["admission"]["podSetAssignments"][0]["flavors"]
    assert flavors == {"cpu": f"last-{ident}"}  # InOrder would have taken first-


async def test_a_queue_chooses_a_third_party_preemption_policy(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ns, ident = world(
        cluster,
        tmp_path,
        annotations={"kq.dev/preemption-policy": "NoPreemption"},
        preemption={"withinClusterQueue": "LowerPriority"},
    )
    cache = tmp_path / "cache"
    apply(cluster, cache, priority_class(f"high-{ident}", 100))
    for name in ("low-1", "low-2"):  # one per flavor: the queue is full
        apply(cluster, cache, workload(ns, name, "lq", {"cpu": 1}))
        await workload_until(client, ns, name, "admitted", lambda o: is_true(o, "Admitted"))
    source = "kueue.x-k8s.io/workloadpriorityclass"
    high = workload(ns, "high", "lq", {"cpu": 1}, priority=100,
                    priorityClassName=f"high-{ident}", priorityClassSource=source)  # fmt: skip
    apply(cluster, cache, high)
    obj = await workload_until(client, ns, "high", "high pending", lambda o: (
        condition(o, "QuotaReserved") or {}).get("status") == "False")  # fmt: skip
    # ClassicPreemption would evict a low one (withinClusterQueue: LowerPriority); this never does.
    assert "Pending the preemption" not in present(condition(obj, "QuotaReserved"))["message"]
    for name in ("low-1", "low-2"):
        low = await client.get(WORKLOADS, name, ns)
        assert is_true(low, "Admitted")
        assert not is_true(low, "Evicted")


async def test_a_third_party_strategy_admits_and_an_unknown_name_is_inactive(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ns, _ = world(cluster, tmp_path, annotations={"kq.dev/queueing-strategy": "ParkAlways"})
    apply(cluster, tmp_path / "cache", workload(ns, "wl", "lq", {"cpu": 1}))
    await workload_until(client, ns, "wl", "admitted", lambda o: is_true(o, "Admitted"))
    _, ident = world(cluster, tmp_path, annotations={"kq.dev/preemption-policy": "Nope"})

    async def inactive() -> dict[str, Any] | None:
        found = condition(await client.get(CLUSTER_QUEUES, f"cq-{ident}"), "Active")
        return found if found and found["status"] == "False" else None

    found = await eventually(inactive, "the ClusterQueue inactive")
    assert found["reason"] == "UnknownPlugin"
    assert found["message"] == (
        "unknown preemption policy 'Nope' (registered: ClassicPreemption, NoPreemption)"
    )


async def test_a_queue_chooses_a_third_party_hot_swap_policy(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    """SpareOnly moves a workload off a failed node only onto free capacity, never evicting."""
    cache, ident = tmp_path / "cache", suffix()
    ns, rf, cq = f"spare-{ident}", f"rf-{ident}", f"cq-{ident}"
    nodes = [await make_node(client, ident, f"pool{p}", i) for p in range(3) for i in range(2)]
    try:
        queue = cluster_queue(cq, rf, "cpu", 100)
        queue["metadata"]["annotations"] = {"kq.dev/hot-swap": "SpareOnly"}
        apply(cluster, cache, namespace(ns), flavor(rf, flavor_labels(ident)), queue,
              local_queue(ns, "lq", cq), priority_class(f"low-{ident}", 1),
              priority_class(f"high-{ident}", 2))  # fmt: skip
        for value, name in enumerate(("low", "high"), start=1):
            apply(cluster, cache, sliced_workload(
                ns, name, "lq", ident, count=2, size=2, cpu=4, priority=value,
                priorityClassName=f"{name}-{ident}", priorityClassSource=WPC_SOURCE))  # fmt: skip
            await workload_until(client, ns, name, "admitted", lambda o: is_true(o, "Admitted"))
        first = pools_of(await client.get(WORKLOADS, "high", ns))[0]
        await set_ready(client, f"{ident}-{first}-0", False)
        moved = await workload_until(client, ns, "high", "moved to the spare pool",
                                     lambda o: first not in pools_of(o))  # fmt: skip
        # Its new pool fails too: the built-in policy would evict low; SpareOnly says why not.
        await set_ready(client, f"{ident}-{pools_of(moved)[0]}-0", False)

        async def no_capacity() -> dict[str, Any] | None:
            events = (await client.list(EVENTS, namespace=ns))["items"]
            return next((e for e in events if e["reason"] == "HotSwapNoCapacity"), None)

        event = await eventually(no_capacity, "a HotSwapNoCapacity event")
        assert event["involvedObject"]["name"] == "high"
        assert event["message"].startswith("no spare capacity: insufficient healthy topology")
        assert not is_true(await client.get(WORKLOADS, "low", ns), "Evicted")
    finally:
        for name in nodes:
            await client.delete(NODES, name)


async def test_a_third_party_veto_holds_a_workload_until_its_label_goes(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ns, _ = world(cluster, tmp_path)
    held = workload(ns, "wl", "lq", {"cpu": 1})
    held["metadata"]["labels"] = {"kq-stages.example/hold": "true"}
    apply(cluster, tmp_path / "cache", held)
    obj = await workload_until(client, ns, "wl", "vetoed", lambda o: (
        condition(o, "QuotaReserved") or {}).get("reason") == "Vetoed")  # fmt: skip
    assert present(condition(obj, "QuotaReserved"))["message"] == (
        "held by kq-stages: the Workload is labelled kq-stages.example/hold=true"
    )
    await client.merge_patch(
        WORKLOADS, "wl", {"metadata": {"labels": {"kq-stages.example/hold": None}}}, namespace=ns
    )
    await workload_until(client, ns, "wl", "admitted", lambda o: is_true(o, "Admitted"))


async def test_third_party_terms_admit_a_workload_only_on_borrowed_capacity(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ns, ident = world(cluster, tmp_path)  # no cohort: nothing to borrow
    borrower = workload(ns, "wl", "lq", {"cpu": 1})
    borrower["metadata"]["labels"] = {"kq-stages.example/borrow-only": "true"}
    apply(cluster, tmp_path / "cache", borrower)
    obj = await workload_until(client, ns, "wl", "pending", lambda o: "kq-stages" in (
        condition(o, "QuotaReserved") or {}).get("message", ""))  # fmt: skip
    reasons = [
        "kq-stages: labelled kq-stages.example/borrow-only: insufficient quota to borrow for "
        f"cpu in flavor {f}-{ident} beyond the ClusterQueue's own, 1 more needed"
        for f in ("first", "last")
    ]
    assert present(condition(obj, "QuotaReserved"))["message"] == (
        f"couldn't assign flavors to pod set main: {', '.join(reasons)}"
    )
    await client.merge_patch(
        WORKLOADS, "wl", {"metadata": {"labels": {"kq-stages.example/borrow-only": None}}},
        namespace=ns,
    )  # fmt: skip
    await workload_until(client, ns, "wl", "admitted", lambda o: is_true(o, "Admitted"))


async def test_a_third_party_strategy_owns_its_queue_order(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    """SmallestFirst: once room frees, the smaller workload goes first though it came later
    (Kueue's order would admit the older, bigger one and leave the small one waiting)."""
    cache, ident = tmp_path / "cache", suffix()
    ns, rf, cq = f"order-{ident}", f"rf-{ident}", f"cq-{ident}"
    queue = cluster_queue(cq, rf, "cpu", 2)
    queue["metadata"]["annotations"] = {"kq.dev/queueing-strategy": "SmallestFirst"}
    apply(cluster, cache, namespace(ns), flavor(rf), queue, local_queue(ns, "lq", cq))
    apply(cluster, cache, workload(ns, "hold", "lq", {"cpu": 2}))
    await workload_until(client, ns, "hold", "admitted", lambda o: is_true(o, "Admitted"))
    apply(cluster, cache, workload(ns, "big", "lq", {"cpu": 2}))
    await workload_until(
        client, ns, "big", "tried", lambda o: condition(o, "QuotaReserved") is not None
    )
    apply(cluster, cache, workload(ns, "small", "lq", {"cpu": 1}))
    await workload_until(
        client, ns, "small", "tried", lambda o: condition(o, "QuotaReserved") is not None
    )
    await finish(client, ns, "hold")
    await workload_until(client, ns, "small", "admitted first", lambda o: is_true(o, "Admitted"))
    big = await client.get(WORKLOADS, "big", ns)
    assert not is_true(big, "QuotaReserved")  # 1 cpu left: big waits behind the smaller one


async def test_a_third_party_queue_order_goes_before_the_strategys(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    """ByRank (``kq_queue_order``): the workload of the lower rank label goes first though it
    came later (BestEffortFIFO alone would admit the older one)."""
    cache, ident = tmp_path / "cache", suffix()
    ns, rf, cq = f"rank-{ident}", f"rf-{ident}", f"cq-{ident}"
    apply(cluster, cache, namespace(ns), flavor(rf), cluster_queue(cq, rf, "cpu", 2),
          local_queue(ns, "lq", cq))  # fmt: skip
    apply(cluster, cache, workload(ns, "hold", "lq", {"cpu": 2}))
    await workload_until(client, ns, "hold", "admitted", lambda o: is_true(o, "Admitted"))
    for name, rank in (("older", "5"), ("newer", "1")):
        ranked = workload(ns, name, "lq", {"cpu": 2})
        ranked["metadata"]["labels"] = {"kq-stages.example/rank": rank}
        apply(cluster, cache, ranked)
        await workload_until(client, ns, name, "tried", tried)
    await finish(client, ns, "hold")
    await workload_until(client, ns, "newer", "admitted first", lambda o: is_true(o, "Admitted"))
    older = await client.get(WORKLOADS, "older", ns)
    assert not is_true(older, "QuotaReserved")


def tried(obj: dict[str, Any]) -> bool:
    return condition(obj, "QuotaReserved") is not None
