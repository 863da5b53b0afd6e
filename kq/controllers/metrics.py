"""Kueue's admission-path series, fed from cycles, confirmed writes and queue status syncs.

Counters move only once the API server accepted the write, so a dashboard never counts an
admission that was forgotten after a conflict.
"""

from __future__ import annotations

import math

from prometheus_client import Gauge

from kq.api.quantity import is_milli
from kq.controllers.feed import CoreFeed
from kq.observability import metrics
from kq.scheduler.cycle import CycleResult
from kq.scheduler.status import queue_usage

SUCCESS = "success"
INADMISSIBLE = "inadmissible"


def cycle(result: CycleResult, seconds: float) -> None:
    """One attempt per cycle that had heads, as Kueue's scheduler counts them."""
    if not result.decisions:
        return
    outcome = SUCCESS if result.admitted else INADMISSIBLE
    metrics.admission_attempts_total.labels(outcome).inc()
    metrics.admission_attempt_duration_seconds.labels(outcome).observe(seconds)


def quota_reserved(cluster_queue: str, waited: float, admitted: bool) -> None:
    metrics.quota_reserved_workloads_total.labels(cluster_queue).inc()
    metrics.quota_reserved_wait_time_seconds.labels(cluster_queue).observe(waited)
    if admitted:
        metrics.admitted_workloads_total.labels(cluster_queue).inc()
        metrics.admission_wait_time_seconds.labels(cluster_queue).observe(waited)


def preempted(victim_queue: str, preempting_queue: str, reason: str) -> None:
    metrics.evicted_workloads_total.labels(victim_queue, "Preempted").inc()
    metrics.preempted_workloads_total.labels(preempting_queue, reason).inc()


class QueueGauges:
    """Per ClusterQueue gauges, refreshed with queue status; a deleted queue's series go."""

    def __init__(self) -> None:
        self._series: set[tuple[Gauge, tuple[str, ...]]] = set()

    def refresh(self, feed: CoreFeed) -> None:
        seen: set[tuple[Gauge, tuple[str, ...]]] = set()

        def put(gauge: Gauge, labels: tuple[str, ...], value: float) -> None:
            gauge.labels(*labels).set(value)
            seen.add((gauge, labels))

        for name, queue in feed.queues.queues.items():
            inadmissible = queue.parked_count()
            put(metrics.pending_workloads, (name, "active"), len(queue) - inadmissible)
            put(metrics.pending_workloads, (name, "inadmissible"), inadmissible)
            active = name in feed.cache.cluster_queues and feed.cache.inactive_reason(name) is None
            for status in ("pending", "active", "terminating"):
                current = status == ("active" if active else "pending")
                put(metrics.cluster_queue_status, (name, status), int(current))
        for name, cq in feed.cache.cluster_queues.items():
            usage = queue_usage(feed.cache, name)
            share = feed.cache.fair_share(name) if feed.fair_sharing else None
            if share is not None:
                weighted = _weighted(share.share())
                put(metrics.cluster_queue_weighted_share, (name, cq.cohort or ""), weighted)
            put(metrics.reserving_active_workloads, (name,), usage.reserving)
            put(metrics.admitted_active_workloads, (name,), usage.admitted)
            for group in cq.resource_groups:
                for flavor in group.flavors:
                    for resource, quota in flavor.resources.items():
                        fr = (flavor.name, resource)
                        row = (cq.cohort or "", name, *fr)
                        scale = 1000 if is_milli(resource) else 1
                        reservation = usage.reservation.get(fr, 0) / scale
                        put(metrics.cluster_queue_resource_reservation, row, reservation)
                        put(
                            metrics.cluster_queue_resource_usage,
                            row,
                            usage.admitted_usage.get(fr, 0) / scale,
                        )
                        put(metrics.cluster_queue_nominal_quota, row, quota.nominal / scale)
        if feed.fair_sharing:
            for cohort in feed.cache.tree().cohorts:
                drs = feed.cache.cohort_share(cohort)
                if drs is not None:
                    put(metrics.cohort_weighted_share, (cohort,), _weighted(drs.share()))
        for gauge, stale in self._series - seen:
            gauge.remove(*stale)
        self._series = seen


def _weighted(share: float) -> float:
    """Kueue reports a borrowing zero weight's infinite share as NaN."""
    return math.nan if math.isinf(share) else share
