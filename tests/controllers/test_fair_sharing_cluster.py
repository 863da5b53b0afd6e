"""Fair sharing through the API on both backends: order by share, preemption by strategy,
``status.fairSharing.weightedShare``, and a zero weight."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kq.config import PluginsConfig
from kq.controllers.admission import AdmissionController
from kq.plugins import build_plugin_manager
from kq.runtime.client import KubeClient
from kq.runtime.resources import CLUSTER_QUEUES, COHORTS, WORKLOADS
from kq.scheduler.plugins import load_admission_plugins
from tests.controllers.conftest import LeaderGate
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    flavor,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.harness import Cluster

BOTH = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


@pytest.fixture
async def fair(client: KubeClient, leader: LeaderGate) -> AsyncIterator[AdmissionController]:
    plugins = load_admission_plugins(build_plugin_manager(PluginsConfig()), BOTH)
    running = AdmissionController(
        client, is_leader=leader, plugins=plugins, event_namespace="default"
    )
    task = asyncio.create_task(running.run())
    yield running
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def fair_queue(name: str, rf: str, cohort: str, cpu: int, **spec: Any) -> dict[str, Any]:
    return cluster_queue(name, rf, "cpu", cpu, cohort=cohort,
                         preemption={"reclaimWithinCohort": "Any"}, **spec)  # fmt: skip


async def weighted_share(client: KubeClient, cq: str, want: int) -> dict[str, Any] | None:
    obj = await client.get(CLUSTER_QUEUES, cq)
    share = ((obj.get("status") or {}).get("fairSharing") or {}).get("weightedShare")
    return obj if share == want else None


async def test_a_queue_reclaims_by_fair_sharing_and_its_share_is_reported(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, fair: AdmissionController
) -> None:
    s = suffix()
    ns, rf, cohort = f"fs-{s}", f"rf-{s}", f"co-{s}"
    a, b, lender = f"a-{s}", f"b-{s}", f"lender-{s}"
    queues = (fair_queue(a, rf, cohort, 4), fair_queue(b, rf, cohort, 4),
              cluster_queue(lender, rf, "cpu", 4, cohort=cohort))  # fmt: skip
    apply(cluster, kubectl_cache, namespace(ns), flavor(rf), *queues,
          local_queue(ns, "qa", a), local_queue(ns, "qb", b))  # fmt: skip
    for i in range(6):
        apply(cluster, kubectl_cache, workload(ns, f"a{i}", "qa", {"cpu": 2}))
    for i in range(6):
        await eventually(lambda i=i: admitted(client, ns, f"a{i}"), f"a{i} admitted")  # type: ignore[misc]
    # a borrows 8 cpus: 8 borrowed per 1000 of the 12 the cohort can lend, rounded up.
    await eventually(lambda: weighted_share(client, a, 667), "a's weightedShare 667")
    await eventually(lambda: weighted_share(client, b, 0), "b's weightedShare 0")
    # A root Cohort never borrows: its share is 0, written beside whatever else its status holds.
    apply(cluster, kubectl_cache, {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort",
                                   "metadata": {"name": cohort}, "spec": {}})  # fmt: skip

    async def cohort_share() -> dict[str, Any] | None:
        obj = await client.get(COHORTS, cohort)
        return (
            obj
            if ((obj.get("status") or {}).get("fairSharing") or {}) == {"weightedShare": 0}
            else None
        )

    await eventually(cohort_share, "the Cohort's weightedShare")
    # b0 would borrow 2 (share 167): a's workloads go while a's share stays at least that.
    apply(cluster, kubectl_cache, workload(ns, "b0", "qb", {"cpu": 6}))

    async def three_evicted() -> list[dict[str, Any]] | None:
        items = (await client.list(WORKLOADS, namespace=ns))["items"]
        found = [w for w in items if (condition(w, "Evicted") or {}).get("status") == "True"]
        return found if len(found) == 3 else None

    for victim in await eventually(three_evicted, "three of a's workloads evicted"):
        preempted = condition(victim, "Preempted") or {}
        assert preempted.get("reason") == "InCohortFairSharing"
        assert "due to Fair Sharing within the cohort" in preempted.get("message", "")


async def test_a_queue_within_its_nominal_reclaims_whatever_the_shares(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, fair: AdmissionController
) -> None:
    """Kueue's FairSharingPreemptWithinNominal: b stays within its quota with b0."""
    s = suffix()
    ns, rf, cohort = f"fn-{s}", f"rf-{s}", f"co-{s}"
    a, b = f"a-{s}", f"b-{s}"
    apply(cluster, kubectl_cache, namespace(ns), flavor(rf), fair_queue(a, rf, cohort, 4),
          fair_queue(b, rf, cohort, 4), local_queue(ns, "qa", a),
          local_queue(ns, "qb", b))  # fmt: skip
    for i in range(4):
        apply(cluster, kubectl_cache, workload(ns, f"a{i}", "qa", {"cpu": 2}))
    for i in range(4):
        await eventually(lambda i=i: admitted(client, ns, f"a{i}"), f"a{i} admitted")  # type: ignore[misc]
    apply(cluster, kubectl_cache, workload(ns, "b0", "qb", {"cpu": 2}))

    async def one_evicted() -> list[dict[str, Any]] | None:
        items = (await client.list(WORKLOADS, namespace=ns))["items"]
        found = [w for w in items if (condition(w, "Evicted") or {}).get("status") == "True"]
        return found or None

    [victim] = await eventually(one_evicted, "one of a's workloads evicted")
    preempted = condition(victim, "Preempted") or {}
    assert preempted.get("reason") == "InCohortReclamation"
    assert "due to reclamation within the cohort" in preempted.get("message", "")


async def test_a_zero_weight_queue_is_admitted_last_and_never_shares(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, fair: AdmissionController
) -> None:
    s = suffix()
    ns, rf, cohort = f"fz-{s}", f"rf-{s}", f"co-{s}"
    zero, one, lender = f"zero-{s}", f"one-{s}", f"lender-{s}"
    apply(cluster, kubectl_cache, namespace(ns), flavor(rf),
          fair_queue(zero, rf, cohort, 1, fairSharing={"weight": "0"}),
          fair_queue(one, rf, cohort, 1), fair_queue(lender, rf, cohort, 2),
          local_queue(ns, "qz", zero), local_queue(ns, "qo", one))  # fmt: skip
    apply(cluster, kubectl_cache, workload(ns, "z", "qz", {"cpu": 2}))
    await eventually(lambda: admitted(client, ns, "z"), "z admitted, borrowing 1")
    await eventually(lambda: weighted_share(client, zero, 2**63 - 1), "an infinite share")
    # o needs 3 of the 2 left: it would end with a share of 500, more than zero's after the
    # eviction (0), so LessThanOrEqualToFinalShare refuses; LessThanInitialShare allows it,
    # as zero's share before (infinite) is higher.
    apply(cluster, kubectl_cache, workload(ns, "o", "qo", {"cpu": 3}))

    async def z_evicted() -> dict[str, Any] | None:
        obj = await client.get(WORKLOADS, "z", ns)
        return obj if (condition(obj, "Evicted") or {}).get("status") == "True" else None

    evicted = await eventually(z_evicted, "z evicted")
    assert (condition(evicted, "Preempted") or {}).get("reason") == "InCohortFairSharing"
    await eventually(lambda: admitted(client, ns, "o"), "o admitted")
