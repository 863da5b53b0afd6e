"""Kueue's LocalQueue series (``kueue_local_queue_*``), registered by ``metric_options.enable``
only when ``metrics.localQueueMetrics.enable`` is on, as Kueue registers them."""

from __future__ import annotations

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

pending_workloads = gauge(
    "local_queue_pending_workloads",
    "Pending workloads per LocalQueue, active or inadmissible.",
    (*_LQ, "status"),
    None,
)
finished_workloads = gauge(
    "local_queue_finished_workloads", "Finished workloads still present.", _LQ, None
)
quota_reserved_workloads_total = counter(
    "local_queue_quota_reserved_workloads_total", "Workloads that got quota.", _LQ_PC, None
)
finished_workloads_total = counter(
    "local_queue_finished_workloads_total", "Workloads that finished.", _LQ_PC, None
)
quota_reserved_wait_time_seconds = histogram(
    "local_queue_quota_reserved_wait_time_seconds",
    "Seconds from creation or requeue until quota reservation.",
    _LQ_PC,
    _WAIT,
    None,
)
admitted_workloads_total = counter(
    "local_queue_admitted_workloads_total", "Admitted workloads.", _LQ_PC, None
)
admission_wait_time_seconds = histogram(
    "local_queue_admission_wait_time_seconds",
    "Seconds from creation or requeue until admission.",
    _LQ_PC,
    _WAIT,
    None,
)
admission_checks_wait_time_seconds = histogram(
    "local_queue_admission_checks_wait_time_seconds",
    "Seconds from quota reservation until admission.",
    _LQ_PC,
    _WAIT,
    None,
)
ready_wait_time_seconds = histogram(
    "local_queue_ready_wait_time_seconds",
    "Seconds from creation or requeue until the pods are ready.",
    _LQ_PC,
    _WAIT,
    None,
)
admitted_until_ready_wait_time_seconds = histogram(
    "local_queue_admitted_until_ready_wait_time_seconds",
    "Seconds from admission until the pods are ready.",
    _LQ_PC,
    _WAIT,
    None,
)
evicted_workloads_total = counter(
    "local_queue_evicted_workloads_total",
    "Evictions per reason and cause.",
    (*_LQ, "reason", "underlying_cause", PC),
    None,
)
reserving_active_workloads = gauge(
    "local_queue_reserving_active_workloads", "Workloads holding quota.", _LQ, None
)
admitted_active_workloads = gauge(
    "local_queue_admitted_active_workloads", "Admitted workloads that are active.", _LQ, None
)
status = gauge(
    "local_queue_status",
    "1 for the LocalQueue's Active condition status (True, False or Unknown).",
    (*_LQ, "active"),
    None,
)
resource_reservation = gauge(
    "local_queue_resource_reservation", "Quota reserved, per flavor and resource.", _LQ_FR, None
)
resource_usage = gauge(
    "local_queue_resource_usage", "Quota used by admitted workloads.", _LQ_FR, None
)
admission_fair_sharing_usage = gauge(
    "local_queue_admission_fair_sharing_usage",
    "Admission fair sharing usage: resource-weighted decayed consumption and pending penalties "
    "over the LocalQueue's weight.",
    (*_LQ, CQ),
    None,
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
