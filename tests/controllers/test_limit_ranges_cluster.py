"""Requests over limits and LimitRanges through a real API: Kueue's Misconfigured words.

The admission controller watches LimitRanges: their defaults are counted against quota, a
workload outside their bounds stays pending, and a LimitRange created later is applied to the
workloads already waiting.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from kq.controllers.admission import AdmissionController
from kq.runtime.client import KubeClient
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    flavor,
    get_workload,
    local_queue,
    namespace,
    pending_with,
    suffix,
    workload,
)
from tests.harness import Cluster

CONTAINER = "spec.podSets[0].template.spec.containers[0]"


def limit_range(ns: str, name: str, kind: str, **item: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"limits": [{"type": kind, **item}]},
    }


def with_resources(
    obj: dict[str, Any], requests: Mapping[str, str], limits: Mapping[str, str] | None = None
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": dict(requests)}
    if limits is not None:
        resources["limits"] = dict(limits)
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = resources
    return obj


def setup(cluster: Cluster, cache: Path, ns: str, s: str, quota: int = 4) -> None:
    apply(
        cluster,
        cache,
        namespace(ns),
        flavor(f"rf-{s}"),
        cluster_queue(f"cq-{s}", f"rf-{s}", "cpu", quota),
        local_queue(ns, "lq", f"cq-{s}"),
    )


async def misconfigured(client: KubeClient, ns: str, name: str, message: str) -> bool:
    obj = await pending_with(client, ns, name, message)
    reserved = condition(obj, "QuotaReserved") if obj else None
    return reserved is not None and reserved["reason"] == "Misconfigured"


async def test_requests_above_limits_stay_pending(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns = f"lim-{s}"
    setup(cluster, kubectl_cache, ns, s)
    wl = with_resources(workload(ns, "w", "lq", {}), {"cpu": "2"}, {"cpu": "1"})
    apply(cluster, kubectl_cache, wl)
    message = (
        f'resources validation failed: {CONTAINER}: Invalid value: ["cpu"]: '
        "requests must not exceed its limits"
    )
    await eventually(lambda: misconfigured(client, ns, "w", message), "w misconfigured")
    assert (await get_workload(client, ns, "w"))["status"].get("admission") is None


async def test_limit_range_defaults_take_quota_and_bounds_hold_back(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, controller: AdmissionController
) -> None:
    s = suffix()
    ns = f"lr-{s}"
    setup(cluster, kubectl_cache, ns, s, quota=1)
    apply(
        cluster,
        kubectl_cache,
        limit_range(ns, "defaults", "Container", defaultRequest={"cpu": "1"}),
    )
    apply(cluster, kubectl_cache, workload(ns, "first", "lq", {}))
    await eventually(partial(admitted, client, ns, "first"), "first admitted")
    # With the default request counted the queue is full: no container goes in as 0 CPU.
    apply(cluster, kubectl_cache, workload(ns, "second", "lq", {}))
    full = (
        "couldn't assign flavors to pod set main: "
        f"insufficient unused quota for cpu in flavor rf-{s}, 1 more needed"
    )
    await eventually(lambda: pending_with(client, ns, "second", full), "second waits for quota")

    # A Pod range has no defaults of its own: the pod's 1 CPU is over its max.
    apply(cluster, kubectl_cache, limit_range(ns, "bounds", "Pod", max={"cpu": "500m"}))
    outside = (
        "resources didn't satisfy LimitRange constraints: spec.podSets[0].template.spec: "
        'Invalid value: ["cpu"]: requests must not be above the limitRange max'
    )
    await eventually(
        lambda: misconfigured(client, ns, "second", outside), "second outside the LimitRange"
    )
