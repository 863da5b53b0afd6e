"""Kueue's priority boost through ``kq run`` and HTTP, on both backends (gate ``PriorityBoost``).

With the gate on, kq's webhook refuses a ``kueue.x-k8s.io/priority-boost`` that is not a signed
int32, a boosted workload is ordered by its effective priority, and a boost written on an
admitted workload makes it a victim of a newcomer its spec priority would have kept out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kq.api.priority import PRIORITY_BOOST_ANNOTATION
from kq.runtime.client import KubeClient
from kq.runtime.resources import WORKLOADS
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    finish,
    flavor,
    get_workload,
    local_queue,
    namespace,
    suffix,
    workload,
    workload_until,
)
from tests.controllers.test_admission_guard_cluster import guard
from tests.harness import Cluster
from tests.kqrun import free_port, kq_run, webhook_ca

pytestmark = pytest.mark.slow
GATE = "featureGates:\n  PriorityBoost: true\n"


def boosted(obj: dict[str, Any], boost: str) -> dict[str, Any]:
    obj["metadata"]["annotations"] = {PRIORITY_BOOST_ANNOTATION: boost}
    return obj


async def is_admitted(client: KubeClient, ns: str, name: str) -> dict[str, Any]:
    return await eventually(lambda: admitted(client, ns, name), f"{name} admitted")


async def test_the_boost_is_validated_orders_and_preempts(
    cluster: Cluster, client: KubeClient, tmp_path: Path
) -> None:
    cache, s = tmp_path / "cache", suffix()
    ns, rf, cq, hook = f"boost-{s}", f"rf-{s}", f"cq-{s}", f"kq-boost-{s}"
    preemption = {"withinClusterQueue": "LowerPriority"}
    apply(cluster, cache, namespace(ns), flavor(rf),
          cluster_queue(cq, rf, "cpu", 1, queueingStrategy="StrictFIFO", preemption=preemption),
          local_queue(ns, "lq", cq))  # fmt: skip
    port, run = free_port(), tmp_path / "run"
    one_cpu: dict[str, str | int] = {"cpu": 1}
    with kq_run(cluster, run, ns, extra_config=GATE, webhook_port=port):
        ca = webhook_ca(run, port)
        apply(cluster, cache, guard(hook, port, ca, ns, ("CREATE", "UPDATE"), "workloads"))
        try:
            bad = boosted(workload(ns, "bad", "lq", one_cpu), "high")
            assert (
                "metadata.annotations[kueue.x-k8s.io/priority-boost]: Invalid value: 'high': "
                "must be a valid signed integer" in cluster.refusal(cache_dir=cache, obj=bad)
            )
            # Ordering: the boosted workload (0 + 10) goes before the plain one (5).
            apply(cluster, cache, workload(ns, "holder", "lq", one_cpu, priority=20))
            await is_admitted(client, ns, "holder")
            apply(cluster, cache, workload(ns, "plain", "lq", one_cpu, priority=5),
                  boosted(workload(ns, "boosted", "lq", one_cpu, priority=0), "10"))  # fmt: skip
            await finish(client, ns, "holder")
            await is_admitted(client, ns, "boosted")
            assert condition(await get_workload(client, ns, "plain"), "Admitted") is None
            # Preemption: lowered to 10 - 20, "boosted" is below "plain" (5), which evicts it.
            await client.merge_patch(
                WORKLOADS, "boosted", {"metadata": {"annotations": {
                    PRIORITY_BOOST_ANNOTATION: "-20"}}}, namespace=ns,
            )  # fmt: skip

            def preempted(obj: dict[str, Any]) -> bool:
                evicted = condition(obj, "Evicted") or {}
                return evicted.get("status") == "True" and evicted.get("reason") == "Preempted"

            await workload_until(client, ns, "boosted", "boosted preempted", preempted)
            await is_admitted(client, ns, "plain")
        finally:
            cluster.kubectl("delete", "validatingwebhookconfiguration", hook, cache_dir=cache)
            cluster.kubectl("delete", "workloads", "--all", "-n", ns, "--wait=false",
                            cache_dir=cache)  # fmt: skip
