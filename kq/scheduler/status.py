"""ClusterQueue and LocalQueue status numbers, computed from the cache and the queues."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kq.api.localqueue import LocalQueue
from kq.api.quantity import format_amount
from kq.api.quotas import FlavorResource
from kq.cache.cache import Cache
from kq.queue.manager import QueueManager


def _flavors(cache: Cache, cq_name: str, usage: dict[FlavorResource, int]) -> list[dict[str, Any]]:
    """``[{name, resources: [{name, total, borrowed}]}]`` in the ClusterQueue's flavor order."""
    cq = cache.cluster_queues[cq_name]
    out = []
    for group in cq.resource_groups:
        for flavor in group.flavors:
            resources = []
            for resource, quota in flavor.resources.items():
                total = usage.get((flavor.name, resource), 0)
                resources.append(
                    {
                        "name": resource,
                        "total": format_amount(resource, total),
                        "borrowed": format_amount(resource, max(0, total - quota.nominal)),
                    }
                )
            out.append({"name": flavor.name, "resources": resources})
    return out


def active_condition(
    cache: Cache, name: str, unused: tuple[str, ...] = ("spec.fairSharing",)
) -> dict[str, str]:
    """The ClusterQueue's ``Active`` condition (the runtime adds the transition time);
    ``unused``: which of the fields kq may ignore it ignores now."""
    why = cache.inactive_reason(name)
    if why is None:
        message = "Can admit new workloads"
        ignored = [
            f
            for f in cache.cluster_queues[name].ignored
            if f.startswith("spec.preemption.") or f in unused
        ]
        if ignored:
            message += f"; kq keeps but does not act on {', '.join(ignored)}"
        return {"type": "Active", "status": "True", "reason": "Ready", "message": message}
    return {"type": "Active", "status": "False", "reason": why[0], "message": why[1]}


@dataclass(frozen=True)
class QueueUsage:
    """What a ClusterQueue's workloads hold: counts, and totals per flavor and resource."""

    reserving: int
    admitted: int
    reservation: dict[FlavorResource, int]
    admitted_usage: dict[FlavorResource, int]


def queue_usage(cache: Cache, name: str) -> QueueUsage:
    reserving = cache.workloads_in(name)
    reservation: dict[FlavorResource, int] = {}
    admitted_usage: dict[FlavorResource, int] = {}
    admitted = 0
    for key, info in reserving.items():
        cached = cache.workload(key)
        is_admitted = cached is not None and cached.admitted
        admitted += is_admitted
        for fr, amount in info.usage.items():
            reservation[fr] = reservation.get(fr, 0) + amount
            if is_admitted:
                admitted_usage[fr] = admitted_usage.get(fr, 0) + amount
    return QueueUsage(len(reserving), admitted, reservation, admitted_usage)


def cluster_queue_status(cache: Cache, queues: QueueManager, name: str) -> dict[str, Any]:
    usage = queue_usage(cache, name)
    return {
        "pendingWorkloads": queues.pending_count(name),
        "reservingWorkloads": usage.reserving,
        "admittedWorkloads": usage.admitted,
        "flavorsReservation": _flavors(cache, name, usage.reservation),
        "flavorsUsage": _flavors(cache, name, usage.admitted_usage),
    }


def local_queue_status(cache: Cache, queues: QueueManager, lq: LocalQueue) -> dict[str, Any]:
    """Counts and per-flavor totals for the workloads that came through ``lq``."""
    reservation: dict[FlavorResource, int] = {}
    admitted_usage: dict[FlavorResource, int] = {}
    reserving = admitted = 0
    for key, info in cache.workloads_in(lq.cluster_queue).items():
        if info.obj.namespace != lq.namespace or info.obj.queue_name != lq.name:
            continue
        cached = cache.workload(key)
        is_admitted = cached is not None and cached.admitted
        reserving += 1
        admitted += is_admitted
        for fr, amount in info.usage.items():
            reservation[fr] = reservation.get(fr, 0) + amount
            if is_admitted:
                admitted_usage[fr] = admitted_usage.get(fr, 0) + amount

    def totals(usage: dict[FlavorResource, int]) -> list[dict[str, Any]]:
        flavors: dict[str, list[dict[str, str]]] = {}
        for (flavor, resource), amount in sorted(usage.items()):
            flavors.setdefault(flavor, []).append(
                {"name": resource, "total": format_amount(resource, amount)}
            )
        return [{"name": f, "resources": r} for f, r in flavors.items()]

    return {
        "pendingWorkloads": queues.pending_in_local_queue(lq.key),
        "reservingWorkloads": reserving,
        "admittedWorkloads": admitted,
        "flavorsReservation": totals(reservation),
        "flavorUsage": totals(admitted_usage),
    }


def local_queue_active_condition(cache: Cache, lq: LocalQueue) -> dict[str, str]:
    """The LocalQueue's ``Active`` condition: stopped, or its ClusterQueue missing or inactive."""
    if lq.stop_policy != "None":
        return _inactive_lq("Stopped", "LocalQueue is stopped")
    if lq.cluster_queue not in cache.cluster_queues:
        return _inactive_lq(
            "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue"
        )
    if cache.inactive_reason(lq.cluster_queue) is not None:
        return _inactive_lq("ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")
    return {
        "type": "Active",
        "status": "True",
        "reason": "Ready",
        "message": "Can submit new workloads to localQueue",
    }


def _inactive_lq(reason: str, message: str) -> dict[str, str]:
    return {"type": "Active", "status": "False", "reason": reason, "message": message}
