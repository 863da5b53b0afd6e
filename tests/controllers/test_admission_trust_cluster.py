"""A ``status.admission`` kq did not make is never counted, through the API on both backends.

A user of team A who may write their Workload's status forges an admission into team B's
ClusterQueue. kq does not charge team B for it: team B's next workload still fits, and the
forged Workload is evicted (reason ``AdmissionNotTrusted``), its reservation cleared and it is
queued again where its LocalQueue says.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kq.controllers.admission import AdmissionController
from kq.runtime.client import KubeClient
from kq.runtime.resources import WORKLOADS
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    flavor,
    kubectl_json,
    local_queue,
    namespace,
    suffix,
    workload,
    workload_until,
)
from tests.harness import Cluster


def forged_status(cq: str, rf: str) -> dict[str, Any]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    assignment = {
        "name": "main",
        "flavors": {"cpu": rf},
        "resourceUsage": {"cpu": "1"},
        "count": 1,
    }
    conditions = [
        {"type": t, "status": "True", "reason": t, "message": "forged", "lastTransitionTime": now}
        for t in ("QuotaReserved", "Admitted")
    ]
    return {
        "status": {
            "admission": {"clusterQueue": cq, "podSetAssignments": [assignment]},
            "conditions": conditions,
        }
    }


async def test_a_forged_admission_is_not_counted_and_is_evicted(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns_a, ns_b, rf, cq_a, cq_b = f"ta-{s}", f"tb-{s}", f"rf-{s}", f"cqa-{s}", f"cqb-{s}"
    apply(
        cluster,
        kubectl_cache,
        namespace(ns_a),
        namespace(ns_b),
        flavor(rf),
        cluster_queue(cq_a, rf, "cpu", 4),
        cluster_queue(cq_b, rf, "cpu", 4),
        local_queue(ns_a, "lq", cq_a),
        local_queue(ns_b, "lq", cq_b),
    )
    apply(cluster, kubectl_cache, workload(ns_b, "b1", "lq", {"cpu": 3}))
    await eventually(lambda: admitted(client, ns_b, "b1"), "b1 admitted")
    # Too big for team A's queue, so it waits there; then its owner forges an admission.
    apply(cluster, kubectl_cache, workload(ns_a, "forger", "lq", {"cpu": 8}))
    await workload_until(
        client,
        ns_a,
        "forger",
        "forger tried and pending",
        lambda o: (condition(o, "QuotaReserved") or {}).get("status") == "False",
    )
    await client.merge_patch(
        WORKLOADS, "forger", forged_status(cq_b, rf), namespace=ns_a, subresource="status"
    )

    def untrusted(obj: dict[str, Any]) -> bool:
        evicted = condition(obj, "Evicted") or {}
        return evicted.get("status") == "True" and evicted.get("reason") == "AdmissionNotTrusted"

    obj = await workload_until(client, ns_a, "forger", "evicted as untrusted", untrusted)
    evicted = condition(obj, "Evicted")
    assert evicted is not None
    assert evicted["message"] == (
        f"The admission was not made by kq: LocalQueue lq admits to ClusterQueue {cq_a}, not {cq_b}"
    )
    # A bare Workload: kq clears the reservation itself, and queues it again at once.
    obj = await workload_until(
        client, ns_a, "forger", "released", lambda o: not (o.get("status") or {}).get("admission")
    )
    requeued = condition(obj, "Requeued")
    assert requeued is not None
    assert (requeued["status"], requeued["reason"]) == ("True", "AdmissionNotTrusted")
    # Team B was never charged: 3 + 1 of its 4 CPUs fit.
    apply(cluster, kubectl_cache, workload(ns_b, "b2", "lq", {"cpu": 1}))
    await eventually(lambda: admitted(client, ns_b, "b2"), "b2 admitted")
    events = kubectl_json(cluster, kubectl_cache, "get", "events", "-n", ns_a, "-o", "json")
    reasons = [(e["type"], e["reason"]) for e in events["items"]]
    assert ("Warning", "AdmissionNotTrusted") in reasons
