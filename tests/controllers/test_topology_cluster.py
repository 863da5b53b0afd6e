"""Topology-aware admission, pod pinning and hot-swap through the API, on both backends.

Nodes are API objects the test creates and fails (Ready=Unknown); pods are created as a job
controller would create them from the admitted template. The built-in SliceHotSwap re-places a
workload whose node failed on a free pool first, and evicts a lower priority only when none is
left; the workload's pods on the failed node are failed so its job restarts at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kq.controllers.admission import AdmissionController
from kq.observability.metrics import REGISTRY
from kq.runtime.client import KubeClient
from kq.runtime.resources import NODES, PODS, WORKLOADS
from tests.controllers.helpers import (
    WPC_SOURCE,
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    flavor,
    local_queue,
    namespace,
    pending_with,
    priority_class,
    suffix,
)
from tests.controllers.topology import (
    HOSTNAME,
    flavor_labels,
    gated_pod,
    make_node,
    pools_of,
    set_ready,
    sliced_workload,
)
from tests.harness import Cluster


async def topology_world(
    cluster: Cluster, cache: Path, client: KubeClient, pools: int, **queue: Any
) -> tuple[str, str, list[str]]:
    ident = suffix()
    ns, rf, cq = f"tas-{ident}", f"rf-{ident}", f"cq-{ident}"
    nodes = [await make_node(client, ident, f"pool{p}", i) for p in range(pools) for i in range(2)]
    apply(cluster, cache, namespace(ns), flavor(rf, flavor_labels(ident)),
          cluster_queue(cq, rf, "cpu", 100, **queue), local_queue(ns, "lq", cq))  # fmt: skip
    return ns, ident, nodes


async def remove(client: KubeClient, nodes: list[str]) -> None:
    for name in nodes:
        await client.delete(NODES, name)


async def test_slices_get_whole_pools_and_gated_pods_are_pinned_to_them(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    ns, ident, nodes = await topology_world(cluster, kubectl_cache, client, pools=2)
    try:
        apply(cluster, kubectl_cache,
              sliced_workload(ns, "wl", "lq", ident, count=4, size=2, cpu=4))  # fmt: skip
        obj = await eventually(lambda: admitted(client, ns, "wl"), "wl admitted")
        pools = pools_of(obj)
        assert pools[0] == pools[1] != pools[2] == pools[3]
        gate = {
            "name": "kueue.x-k8s.io/topology",
            "cluster_queue": obj["status"]["admission"]["clusterQueue"],
            "is_group": "false",
            "replica_role": "standalone",
        }
        timed = "kueue_pod_scheduling_gate_removal_seconds_count"
        before = REGISTRY.get_sample_value(timed, gate) or 0
        for index in range(4):
            await client.create(PODS, gated_pod(ns, "wl", index, cpu=4))

        async def pinned() -> list[str] | None:
            pods = [await client.get(PODS, f"wl-{i}", ns) for i in range(4)]
            if any(p["spec"].get("schedulingGates") for p in pods):
                return None
            return [p["spec"]["nodeSelector"][HOSTNAME] for p in pods]

        hosts = await eventually(pinned, "every pod ungated and pinned")
        assert len(set(hosts)) == 4
        assert [h.split("-")[1] for h in hosts] == pools  # its slice's pool, one pod per node

        # Kueue's gate-removal latency, once per pinned pod.
        async def all_timed() -> bool:
            return REGISTRY.get_sample_value(timed, gate) == before + 4

        await eventually(all_timed, "4 gate removals timed")
        apply(cluster, kubectl_cache,
              sliced_workload(ns, "more", "lq", ident, count=2, size=2, cpu=4))  # fmt: skip
        words = (
            f"insufficient healthy topology domains for pod set main in flavor rf-{ident}: needs "
            f"1 kq-test.dev/pool-{ident} domain(s) with room for 2 pods each; 2 exist, 2 healthy, "
            "0 free"
        )
        waiting = await eventually(lambda: pending_with(client, ns, "more", words), words)
        assert (condition(waiting, "QuotaReserved") or {})["reason"] == "Pending"
    finally:
        await remove(client, nodes)


async def test_hot_swap_takes_a_free_pool_then_evicts_a_lower_priority(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    ns, ident, nodes = await topology_world(cluster, kubectl_cache, client, pools=3)
    try:
        apply(cluster, kubectl_cache, priority_class(f"low-{ident}", 1),
              priority_class(f"high-{ident}", 2))  # fmt: skip
        for value, name in enumerate(("low", "high"), start=1):
            apply(cluster, kubectl_cache, sliced_workload(
                ns, name, "lq", ident, count=2, size=2, cpu=4, priority=value,
                priorityClassName=f"{name}-{ident}", priorityClassSource=WPC_SOURCE))  # fmt: skip
        await eventually(lambda: admitted(client, ns, "low"), "low admitted")
        await eventually(lambda: admitted(client, ns, "high"), "high admitted")
        high = await client.get(WORKLOADS, "high", ns)
        first = pools_of(high)[0]
        bound = gated_pod(ns, "high", 0, cpu=4)
        bound["spec"] = {**bound["spec"], "schedulingGates": None,
                         "nodeName": f"{ident}-{first}-0"}  # fmt: skip
        await client.create(PODS, bound)
        # A node of high's pool fails: the free pool takes high; nobody is evicted.
        await set_ready(client, f"{ident}-{first}-0", False)
        moved = await eventually(lambda: _moved_from(client, ns, "high", first), "high moved")
        second = pools_of(moved)[0]
        low = await client.get(WORKLOADS, "low", ns)
        assert pools_of(low)[0] not in (first, second)
        assert (condition(low, "Evicted") or {}).get("status") != "True"

        async def failed_pod() -> dict[str, Any] | None:
            pod = await client.get(PODS, "high-0", ns)
            return pod if pod["status"].get("phase") == "Failed" else None

        pod = await eventually(failed_pod, "high's pod on the failed node failed")
        disruption = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert (disruption["status"], disruption["reason"]) == ("True", "HotSwap")
        # Now the pool it moved to fails too: no free pool, so the lower priority makes room.
        await set_ready(client, f"{ident}-{second}-1", False)
        evicted = await eventually(lambda: _evicted(client, ns, "low"), "low evicted")
        assert (condition(evicted, "Preempted") or {})["reason"] == "HotSwap"
        assert (
            f"recovering workload {ns}/high after the failure of "
            in ((condition(evicted, "Evicted") or {})["message"])
        )
        await eventually(lambda: _moved_from(client, ns, "high", second), "high moved again")
    finally:
        await remove(client, nodes)


async def _moved_from(client: KubeClient, ns: str, name: str, pool: str) -> dict[str, Any] | None:
    obj = await client.get(WORKLOADS, name, ns)
    return obj if pool not in pools_of(obj) else None


async def _evicted(client: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    obj = await client.get(WORKLOADS, name, ns)
    return obj if (condition(obj, "Evicted") or {}).get("status") == "True" else None
