"""Kueue's ClusterQueue, Cohort and LocalQueue gauges, refreshed with queue status.

Each refresh sets every series it knows of and removes those it no longer does, so a deleted
queue's series go (Kueue clears them on deletion).
"""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client import Gauge

from kq.api.clusterqueue import ClusterQueue
from kq.api.quantity import is_milli
from kq.api.quotas import FlavorResource
from kq.cache.quota_tree import QuotaNode
from kq.controllers.feed import CoreFeed
from kq.controllers.metrics import TRANSITIONS, cohorts_above
from kq.observability import lq_metrics, metrics
from kq.observability.metric_options import role, state
from kq.scheduler.status import local_queue_active_condition, queue_usage

Series = tuple[Gauge, tuple[str, ...]]
CQ_STATUSES = ("pending", "active", "terminating")


def _scale(resource: str) -> int:
    return 1000 if is_milli(resource) else 1


def _limit(value: int | None, resource: str) -> float:
    return math.inf if value is None else value / _scale(resource)


def _weighted(share: float) -> float:
    """Kueue reports a borrowing zero weight's infinite share as NaN."""
    return math.nan if math.isinf(share) else share


def _leaves(node: QuotaNode) -> Iterable[str]:
    for child in node.children:
        if child.is_cluster_queue:
            yield child.name
        else:
            yield from _leaves(child)


class QueueGauges:
    """One refresh writes every gauge from the core's state; a vanished queue's series go."""

    def __init__(self, finished: Mapping[str, tuple[str, tuple[str, str]]] | None = None) -> None:
        self._series: set[Series] = set()
        self._seen: set[Series] = set()
        self._finished = finished if finished is not None else TRANSITIONS.finished

    def _put(self, gauge: Gauge, labels: tuple[str, ...], value: float) -> None:
        row = (*labels, role())
        gauge.labels(*row).set(value)
        self._seen.add((gauge, row))

    def refresh(self, feed: CoreFeed) -> None:
        self._seen = set()
        self._cluster_queues(feed)
        self._cohorts(feed)
        if state.local_queues:
            self._local_queues(feed)
        for gauge, stale in self._series - self._seen:
            with contextlib.suppress(KeyError):  # cleared by a role change meanwhile
                gauge.remove(*stale)
        self._series = self._seen

    def _cluster_queues(self, feed: CoreFeed) -> None:
        finished = Counter(cq for cq, _ in self._finished.values())
        for name, queue in feed.queues.queues.items():
            inadmissible = queue.parked_count()
            self._put(metrics.pending_workloads, (name, "active"), len(queue) - inadmissible)
            self._put(metrics.pending_workloads, (name, "inadmissible"), inadmissible)
            active = name in feed.cache.cluster_queues and feed.cache.inactive_reason(name) is None
            for status in CQ_STATUSES:
                current = status == ("active" if active else "pending")
                self._put(metrics.cluster_queue_status, (name, status), int(current))
            for resource, amount in feed.queues.pending_requests(name).items():
                value = amount / _scale(resource)
                self._put(metrics.cluster_queue_resource_pending, (name, resource), value)
        for name, cq in feed.cache.cluster_queues.items():
            usage = queue_usage(feed.cache, name)
            above = cohorts_above(feed, name)
            parent, root = (above[0], above[-1]) if above else ("", "")
            self._put(metrics.cluster_queue_info, (name, parent, root), 1)
            self._put(metrics.finished_workloads, (name,), finished.get(name, 0))
            share = feed.cache.fair_share(name) if feed.fair_sharing else None
            if share is not None:
                weighted = _weighted(share.share())
                self._put(metrics.cluster_queue_weighted_share, (name, cq.cohort or ""), weighted)
            self._put(metrics.reserving_active_workloads, (name,), usage.reserving)
            self._put(metrics.admitted_active_workloads, (name,), usage.admitted)
            if state.cluster_queue_resources:
                self._quotas(name, cq.cohort or "", cq, usage.reservation, usage.admitted_usage)

    def _quotas(
        self,
        name: str,
        cohort: str,
        cq: ClusterQueue,
        reservation: Mapping[FlavorResource, int],
        used: Mapping[FlavorResource, int],
    ) -> None:
        for group in cq.resource_groups:
            for flavor in group.flavors:
                for resource, quota in flavor.resources.items():
                    fr = (flavor.name, resource)
                    row = (cohort, name, *fr)
                    scale = _scale(resource)
                    put = self._put
                    put(
                        metrics.cluster_queue_resource_reservation,
                        row,
                        reservation.get(fr, 0) / scale,
                    )
                    put(metrics.cluster_queue_resource_usage, row, used.get(fr, 0) / scale)
                    put(metrics.cluster_queue_nominal_quota, row, quota.nominal / scale)
                    put(
                        metrics.cluster_queue_borrowing_limit,
                        row,
                        _limit(quota.borrowing_limit, resource),
                    )
                    put(
                        metrics.cluster_queue_lending_limit,
                        row,
                        _limit(quota.lending_limit, resource),
                    )

    def _cohorts(self, feed: CoreFeed) -> None:
        tree = feed.cache.tree()
        for name, node in tree.cohorts.items():
            parent = node.parent.name if node.parent is not None else ""
            self._put(metrics.cohort_info, (name, parent, node.root().name), 1)
            for (flavor, resource), amount in node.subtree.items():
                value = amount / _scale(resource)
                self._put(metrics.cohort_subtree_quota, (name, flavor, resource), value)
            reserved: Counter[FlavorResource] = Counter()
            admitted = 0
            for cq in _leaves(node):
                usage = queue_usage(feed.cache, cq)
                reserved.update(usage.reservation)
                admitted += usage.admitted
            for (flavor, resource), amount in reserved.items():
                value = amount / _scale(resource)
                self._put(
                    metrics.cohort_subtree_resource_reservations, (name, flavor, resource), value
                )
            self._put(metrics.cohort_subtree_admitted_active_workloads, (name,), admitted)
            drs = feed.cache.cohort_share(name) if feed.fair_sharing else None
            if drs is not None:
                self._put(metrics.cohort_weighted_share, (name,), _weighted(drs.share()))

    def _local_queues(self, feed: CoreFeed) -> None:
        inadmissible = _inadmissible_per_local_queue(feed)
        finished = Counter(f"{ns}/{lq}" for _, (lq, ns) in self._finished.values())
        usage = _local_queue_usage(feed)
        for key, lq in feed.queues.local_queues.items():
            row = (lq.name, lq.namespace)
            parked = inadmissible.get(key, 0)
            pending = feed.queues.pending_in_local_queue(key)
            used = usage.get(key, _LocalUsage())
            self._put(lq_metrics.pending_workloads, (*row, "active"), pending - parked)
            self._put(lq_metrics.pending_workloads, (*row, "inadmissible"), parked)
            self._put(lq_metrics.reserving_active_workloads, row, used.reserving)
            self._put(lq_metrics.admitted_active_workloads, row, used.admitted)
            self._put(lq_metrics.finished_workloads, row, finished.get(key, 0))
            active = local_queue_active_condition(feed.cache, lq)["status"]
            for status in ("True", "False", "Unknown"):
                self._put(lq_metrics.status, (*row, status), int(status == active))
            self._per_flavor(lq_metrics.resource_reservation, row, used.reservation)
            self._per_flavor(lq_metrics.resource_usage, row, used.used)

    def _per_flavor(
        self, gauge: Gauge, row: tuple[str, str], amounts: Mapping[FlavorResource, int]
    ) -> None:
        for (flavor, resource), amount in amounts.items():
            self._put(gauge, (*row, flavor, resource), amount / _scale(resource))


def _inadmissible_per_local_queue(feed: CoreFeed) -> Counter[str]:
    """Per LocalQueue key, its pending workloads no cycle looks at before a requeue (parked
    alone or by shape), as the ClusterQueue's ``inadmissible`` count."""
    out: Counter[str] = Counter()
    for queue in feed.queues.queues.values():
        shapes = queue.parked_shapes
        for info in queue.unordered():
            if info.key in queue.inadmissible or info.shape in shapes:
                out[f"{info.obj.namespace}/{info.obj.queue_name}"] += 1
    return out


@dataclass(slots=True)
class _LocalUsage:
    reserving: int = 0
    admitted: int = 0
    reservation: Counter[FlavorResource] = field(default_factory=Counter)
    used: Counter[FlavorResource] = field(default_factory=Counter)


def _local_queue_usage(feed: CoreFeed) -> dict[str, _LocalUsage]:
    """Per LocalQueue key, its workloads holding quota: one pass over the cache."""
    out: dict[str, _LocalUsage] = {}
    for name in feed.cache.cluster_queues:
        for key, info in feed.cache.workloads_in(name).items():
            lq = out.setdefault(f"{info.obj.namespace}/{info.obj.queue_name}", _LocalUsage())
            cached = feed.cache.workload(key)
            lq.reserving += 1
            lq.reservation.update(info.usage)
            if cached is not None and cached.admitted:
                lq.admitted += 1
                lq.used.update(info.usage)
    return out
