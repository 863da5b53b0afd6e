"""Admission fair sharing through ``kq run`` and HTTP, on both backends.

A ClusterQueue with ``admissionScope: UsageBasedAdmissionFairSharing`` admits next from the
LocalQueue that used less: the usage is written to LocalQueue status, read back by a restarted
kq, and divided by each LocalQueue's ``spec.fairSharing.weight``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kq.api.quantity import parse_quantity
from kq.api.timestamps import parse_time
from kq.runtime.client import KubeClient
from kq.runtime.resources import LOCAL_QUEUES
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
)
from tests.harness import Cluster, present
from tests.kqrun import free_port, kq_run
from tests.metrics.test_kueue_metrics import scrape

pytestmark = pytest.mark.slow

# A long half-life: what a queue used stays almost whole for the test's seconds.
CONFIG = """admissionFairSharing:
  usageHalfLifeTime: 1h
  usageSamplingInterval: 1s
"""
AFS: dict[str, Any] = {"admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"}}


def world(cluster: Cluster, cache: Path, cpu: int, *queues: dict[str, Any]) -> str:
    """A namespace with the given LocalQueues on a fair-sharing ClusterQueue ``cq-<ns>``."""
    ns = f"afs-{suffix()}"
    cq, rf = f"cq-{ns}", f"rf-{ns}"
    apply(cluster, cache, namespace(ns), flavor(rf), cluster_queue(cq, rf, "cpu", cpu, **AFS))
    for lq in queues:
        lq["metadata"]["namespace"] = ns
        lq["spec"]["clusterQueue"] = cq
        apply(cluster, cache, lq)
    return ns


def queue(name: str, weight: str | None = None) -> dict[str, Any]:
    lq = local_queue("", name, "")
    if weight is not None:
        lq["spec"]["fairSharing"] = {"weight": weight}
    return lq


async def consumed(client: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    """The LocalQueue's fair-sharing status once it records some cpu."""
    obj = await client.get(LOCAL_QUEUES, name, ns)
    fair = (obj.get("status") or {}).get("fairSharing") or {}
    status = fair.get("admissionFairSharingStatus") or {}
    cpu = (status.get("consumedResources") or {}).get("cpu")
    return status if cpu is not None and parse_quantity(cpu) > 0 else None


async def waiting(client: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    obj = await get_workload(client, ns, name)
    reserved = condition(obj, "QuotaReserved") or {}
    return obj if reserved.get("status") == "False" else None


async def test_the_queue_that_used_more_waits_and_a_restart_remembers_it(
    cluster: Cluster, client: KubeClient, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    ns = world(cluster, cache, 2, queue("heavy"), queue("light"))
    with kq_run(cluster, tmp_path / "first", ns, CONFIG):
        apply(cluster, cache, workload(ns, "h1", "heavy", {"cpu": 2}))
        await eventually(lambda: admitted(client, ns, "h1"), "h1 admitted")
        status = await eventually(lambda: consumed(client, ns, "heavy"), "heavy's usage written")
        assert parse_quantity(status["consumedResources"]["cpu"]) < 2
        assert parse_time(status["lastUpdate"]) is not None
        await finish(client, ns, "h1")
    # kq is down: the older workload is heavy's, so without fair sharing it would go first.
    apply(cluster, cache, workload(ns, "h2", "heavy", {"cpu": 2}))
    # Creation times are in whole seconds: l1 is created once the clock has left h2's second,
    # so h2 is strictly older.
    created = present(
        parse_time((await get_workload(client, ns, "h2"))["metadata"]["creationTimestamp"])
    )

    async def next_second() -> bool:
        return time.time() >= created + 1

    await eventually(next_second, "the clock past h2's creation second")
    apply(cluster, cache, workload(ns, "l1", "light", {"cpu": 2}))
    with kq_run(cluster, tmp_path / "second", ns, CONFIG):
        await eventually(lambda: admitted(client, ns, "l1"), "l1 admitted first")
        h2 = await eventually(lambda: waiting(client, ns, "h2"), "h2 waiting")
        assert "Admitted" not in {c["type"] for c in h2["status"]["conditions"]}
        await finish(client, ns, "l1")
        await eventually(lambda: admitted(client, ns, "h2"), "h2 admitted next")


async def test_a_queue_with_a_higher_weight_goes_first_at_equal_usage(
    cluster: Cluster, client: KubeClient, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    ns = world(cluster, cache, 2, queue("big", "4"), queue("small"))
    port = free_port()
    with kq_run(cluster, tmp_path / "run", ns, CONFIG, metrics_port=port):
        apply(cluster, cache, workload(ns, "s1", "small", {"cpu": 1}))
        apply(cluster, cache, workload(ns, "b1", "big", {"cpu": 1}))
        for name in ("s1", "b1"):
            await eventually(lambda n=name: admitted(client, ns, n), f"{name} admitted")  # type: ignore[misc]
        for lq in ("small", "big"):
            await eventually(lambda q=lq: consumed(client, ns, q), f"{lq}'s usage written")  # type: ignore[misc]

        async def weighted() -> dict[str, float] | None:
            # Equal consumption, so the weight-4 queue comes to report about a quarter of the
            # other's; not at once, as each queue's first sample may come at its own moment.
            usage = await reported_usage(port, ns)
            return usage if usage is not None and usage["big"] < usage["small"] / 2 else None

        await eventually(weighted, "the weight-4 queue's usage under half the other's")
        apply(cluster, cache, workload(ns, "s2", "small", {"cpu": 1}))
        await eventually(lambda: waiting(client, ns, "s2"), "s2 waiting")
        apply(cluster, cache, workload(ns, "b2", "big", {"cpu": 1}))
        await eventually(lambda: waiting(client, ns, "b2"), "b2 waiting")
        await finish(client, ns, "s1")
        await eventually(lambda: admitted(client, ns, "b2"), "b2, of the heavier weight, admitted")
        assert await waiting(client, ns, "s2") is not None


async def reported_usage(port: int, ns: str) -> dict[str, float] | None:
    """``kueue_local_queue_admission_fair_sharing_usage`` of ns's queues, once both report."""
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(await asyncio.to_thread(scrape, port)):
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "kueue_local_queue_admission_fair_sharing_usage"
                and labels.get("namespace") == ns
                and labels.get("cluster_queue") == f"cq-{ns}"
            ):
                found[labels["name"]] = sample.value
    return found if len(found) == 2 and all(v > 0 for v in found.values()) else None
