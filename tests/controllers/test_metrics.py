"""Kueue's admission-path series move with what the controller wrote."""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path

from kq.controllers.admission import AdmissionController
from kq.observability.metric_options import enable
from kq.observability.metrics import REGISTRY
from kq.runtime.client import KubeClient
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    eventually,
    flavor,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.harness import Cluster


def sample(metric: str, /, **labels: str) -> float | None:
    """A sample of this (standalone) replica."""
    return REGISTRY.get_sample_value(metric, {**labels, "replica_role": "standalone"})


async def test_admission_counters_and_queue_gauges(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    enable(local_queues=True, cluster_queue_resources=True)
    s = suffix()
    ns, rf, cq = f"met-{s}", f"rf-{s}", f"cq-{s}"
    attempts = sample("kueue_admission_attempts_total", result="success") or 0.0
    apply(
        cluster,
        kubectl_cache,
        namespace(ns),
        flavor(rf),
        cluster_queue(cq, rf, "cpu", 4),
        local_queue(ns, "lq", cq),
    )
    apply(cluster, kubectl_cache, workload(ns, "a", "lq", {"cpu": 3}))
    await eventually(partial(admitted, client, ns, "a"), "a admitted")
    apply(cluster, kubectl_cache, workload(ns, "b", "lq", {"cpu": 2}))

    async def gauges() -> bool | None:
        pending = sample("kueue_pending_workloads", cluster_queue=cq, status="inadmissible")
        return True if pending == 1 else None

    await eventually(gauges, "pending gauge")
    assert sample("kueue_quota_reserved_workloads_total", cluster_queue=cq, priority_class="") == 1
    assert sample("kueue_admitted_workloads_total", cluster_queue=cq, priority_class="") == 1
    assert (
        sample("kueue_admission_wait_time_seconds_count", cluster_queue=cq, priority_class="") == 1
    )
    assert (sample("kueue_admission_attempts_total", result="success") or 0) > attempts
    assert sample("kueue_reserving_active_workloads", cluster_queue=cq) == 1
    assert sample("kueue_admitted_active_workloads", cluster_queue=cq) == 1
    assert sample("kueue_cluster_queue_status", cluster_queue=cq, status="active") == 1
    row = {"cohort": "", "cluster_queue": cq, "flavor": rf, "resource": "cpu"}
    assert sample("kueue_cluster_queue_resource_usage", **row) == 3.0
    assert sample("kueue_cluster_queue_nominal_quota", **row) == 4.0
    assert sample("kueue_cluster_queue_borrowing_limit", **row) == math.inf
    assert sample("kueue_cluster_queue_resource_pending", cluster_queue=cq, resource="cpu") == 2
    assert sample("kueue_cluster_queue_info", cluster_queue=cq, parent_cohort="", root_cohort="")
    lq = {"name": "lq", "namespace": ns}
    assert sample("kueue_local_queue_pending_workloads", **lq, status="inadmissible") == 1
    assert sample("kueue_local_queue_admitted_active_workloads", **lq) == 1
    assert sample("kueue_local_queue_status", **lq, active="True") == 1
    assert sample("kueue_local_queue_resource_usage", **lq, flavor=rf, resource="cpu") == 3
    assert sample("kueue_local_queue_admitted_workloads_total", **lq, priority_class="") == 1
