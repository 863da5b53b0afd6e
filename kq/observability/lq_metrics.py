"""Kueue's LocalQueue series (``kueue_local_queue_*``), registered by ``metric_options.enable``
only when ``metrics.localQueueMetrics.enable`` is on, as Kueue registers them."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import Counter, Gauge, Histogram

from kq.observability.metrics import (
    CQ,
    LQ_NAME,
    LQ_NS,
    PC,
    counter,
    exponential_buckets,
    gauge,
    histogram,
)

_LQ = (LQ_NAME, LQ_NS)
_LQ_PC = (*_LQ, PC)
_LQ_FR = (*_LQ, "flavor", "resource")
_WAIT = exponential_buckets(14)

# Created unregistered (registry None): ``metric_options.enable`` registers them when on.


def _gauge(name: str, doc: str, labels: Sequence[str] = _LQ) -> Gauge:
    return gauge(name, doc, labels, None)


def _counter(name: str, doc: str) -> Counter:
    return counter(name, doc, _LQ_PC, None)


def _wait(name: str, doc: str) -> Histogram:
    return histogram(name, doc, _LQ_PC, _WAIT, None)


pending_workloads = _gauge(
    "local_queue_pending_workloads",
    "Pending workloads per LocalQueue, active or inadmissible.",
    (*_LQ, "status"),
)
finished_workloads = _gauge("local_queue_finished_workloads", "Finished workloads still present.")
quota_reserved_workloads_total = _counter(
    "local_queue_quota_reserved_workloads_total", "Workloads that got quota."
)
finished_workloads_total = _counter(
    "local_queue_finished_workloads_total", "Workloads that finished."
)
quota_reserved_wait_time_seconds = _wait(
    "local_queue_quota_reserved_wait_time_seconds",
    "Seconds from creation or requeue until quota reservation.",
)
admitted_workloads_total = _counter("local_queue_admitted_workloads_total", "Admitted workloads.")
admission_wait_time_seconds = _wait(
    "local_queue_admission_wait_time_seconds", "Seconds from creation or requeue until admission."
)
admission_checks_wait_time_seconds = _wait(
    "local_queue_admission_checks_wait_time_seconds",
    "Seconds from quota reservation until admission.",
)
ready_wait_time_seconds = _wait(
    "local_queue_ready_wait_time_seconds",
    "Seconds from creation or requeue until the pods are ready.",
)
admitted_until_ready_wait_time_seconds = _wait(
    "local_queue_admitted_until_ready_wait_time_seconds",
    "Seconds from admission until the pods are ready.",
)
evicted_workloads_total = counter(
    "local_queue_evicted_workloads_total",
    "Evictions per reason and cause.",
    (*_LQ, "reason", "underlying_cause", PC),
    None,
)
reserving_active_workloads = _gauge(
    "local_queue_reserving_active_workloads", "Workloads holding quota."
)
admitted_active_workloads = _gauge(
    "local_queue_admitted_active_workloads", "Admitted workloads that are active."
)
status = _gauge(
    "local_queue_status",
    "1 for the LocalQueue's Active condition status (True, False or Unknown).",
    (*_LQ, "active"),
)
resource_reservation = _gauge(
    "local_queue_resource_reservation", "Quota reserved, per flavor and resource.", _LQ_FR
)
resource_usage = _gauge("local_queue_resource_usage", "Quota used by admitted workloads.", _LQ_FR)
admission_fair_sharing_usage = _gauge(
    "local_queue_admission_fair_sharing_usage",
    "Admission fair sharing usage: resource-weighted decayed consumption and pending penalties "
    "over the LocalQueue's weight.",
    (*_LQ, CQ),
)

GAUGES = (
    pending_workloads,
    finished_workloads,
    reserving_active_workloads,
    admitted_active_workloads,
    status,
    resource_reservation,
    resource_usage,
    admission_fair_sharing_usage,
)
ALL = (
    *(g for g in GAUGES if g is not finished_workloads),  # registered unchecked
    quota_reserved_workloads_total,
    finished_workloads_total,
    quota_reserved_wait_time_seconds,
    admitted_workloads_total,
    admission_wait_time_seconds,
    admission_checks_wait_time_seconds,
    ready_wait_time_seconds,
    admitted_until_ready_wait_time_seconds,
    evicted_workloads_total,
)
