"""Prometheus metrics under Kueue's names and buckets, on kq's own registry.

Dashboards and alerts written for Kueue read ``kueue_*`` series; the work-queue series use
controller-runtime's names. ``_created`` series are off because Go's client has none.
"""

from __future__ import annotations

import platform
import sys

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kq import __version__

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

REGISTRY = CollectorRegistry(auto_describe=True)
KUEUE = "kueue"


def exponential_buckets(count: int) -> tuple[float, ...]:
    """Kueue's ``generateExponentialBuckets``: 1, then 2.5 doubling, ``count`` in all."""
    return (1.0, *(2.5 * 2**k for k in range(count - 1)))


CQ = "cluster_queue"

admission_attempts_total = Counter(
    "admission_attempts_total",
    "Total number of attempts to admit workloads, by result (success or inadmissible).",
    ["result"],
    subsystem=KUEUE,
    registry=REGISTRY,
)
admission_attempt_duration_seconds = Histogram(
    "admission_attempt_duration_seconds",
    "Latency of an admission attempt, by result.",
    ["result"],
    subsystem=KUEUE,
    buckets=exponential_buckets(14),
    registry=REGISTRY,
)
pending_workloads = Gauge(
    "pending_workloads",
    "Number of pending workloads, per cluster_queue and status (active or inadmissible).",
    [CQ, "status"],
    subsystem=KUEUE,
    registry=REGISTRY,
)
quota_reserved_workloads_total = Counter(
    "quota_reserved_workloads_total",
    "Total number of workloads that got quota reserved, per cluster_queue.",
    [CQ],
    subsystem=KUEUE,
    registry=REGISTRY,
)
quota_reserved_wait_time_seconds = Histogram(
    "quota_reserved_wait_time_seconds",
    "Time from creation or requeue until quota reservation, per cluster_queue.",
    [CQ],
    subsystem=KUEUE,
    buckets=exponential_buckets(16),
    registry=REGISTRY,
)
admitted_workloads_total = Counter(
    "admitted_workloads_total",
    "Total number of admitted workloads, per cluster_queue.",
    [CQ],
    subsystem=KUEUE,
    registry=REGISTRY,
)
admission_wait_time_seconds = Histogram(
    "admission_wait_time_seconds",
    "Time from creation or requeue until admission, per cluster_queue.",
    [CQ],
    subsystem=KUEUE,
    buckets=exponential_buckets(16),
    registry=REGISTRY,
)
admission_checks_wait_time_seconds = Histogram(
    "admission_checks_wait_time_seconds",
    "Time from quota reservation until admission, per cluster_queue.",
    [CQ],
    subsystem=KUEUE,
    buckets=exponential_buckets(14),
    registry=REGISTRY,
)
evicted_workloads_total = Counter(
    "evicted_workloads_total",
    "Number of evicted workloads, per cluster_queue and reason.",
    [CQ, "reason"],
    subsystem=KUEUE,
    registry=REGISTRY,
)
preempted_workloads_total = Counter(
    "preempted_workloads_total",
    "Number of preempted workloads, per preempting_cluster_queue and reason.",
    ["preempting_cluster_queue", "reason"],
    subsystem=KUEUE,
    registry=REGISTRY,
)
reserving_active_workloads = Gauge(
    "reserving_active_workloads",
    "Number of workloads holding quota, per cluster_queue.",
    [CQ],
    subsystem=KUEUE,
    registry=REGISTRY,
)
admitted_active_workloads = Gauge(
    "admitted_active_workloads",
    "Number of admitted workloads that are active, per cluster_queue.",
    [CQ],
    subsystem=KUEUE,
    registry=REGISTRY,
)
cluster_queue_status = Gauge(
    "cluster_queue_status",
    "Status of a cluster_queue (pending, active or terminating), 1 for the current one.",
    [CQ, "status"],
    subsystem=KUEUE,
    registry=REGISTRY,
)
cluster_queue_weighted_share = Gauge(
    "cluster_queue_weighted_share",
    "The ClusterQueue's share of borrowed resources under fair sharing: per 1000 of what the "
    "cohort can lend, divided by its weight (int64 maximum when a zero weight borrows).",
    [CQ, "cohort"],
    subsystem=KUEUE,
    registry=REGISTRY,
)
cohort_weighted_share = Gauge(
    "cohort_weighted_share",
    "The Cohort's share of borrowed resources under fair sharing, as the ClusterQueues'.",
    ["cohort"],
    subsystem=KUEUE,
    registry=REGISTRY,
)
_RESOURCE = ["cohort", CQ, "flavor", "resource"]
cluster_queue_resource_reservation = Gauge(
    "cluster_queue_resource_reservation",
    "Total quota reserved by workloads, per cluster_queue, flavor and resource.",
    _RESOURCE,
    subsystem=KUEUE,
    registry=REGISTRY,
)
cluster_queue_resource_usage = Gauge(
    "cluster_queue_resource_usage",
    "Total quota used by admitted workloads, per cluster_queue, flavor and resource.",
    _RESOURCE,
    subsystem=KUEUE,
    registry=REGISTRY,
)
cluster_queue_nominal_quota = Gauge(
    "cluster_queue_nominal_quota",
    "Nominal quota, per cluster_queue, flavor and resource.",
    _RESOURCE,
    subsystem=KUEUE,
    registry=REGISTRY,
)
build_info = Gauge(
    "build_info",
    "Build information: 1 labelled with version and platform.",
    ["git_version", "git_commit", "build_date", "go_version", "compiler", "platform"],
    subsystem=KUEUE,
    registry=REGISTRY,
)
build_info.labels(
    git_version=__version__,
    git_commit="",
    build_date="",
    # Kueue reports the Go runtime here; kq reports its interpreter in the same slot.
    go_version=f"python{platform.python_version()}",
    compiler=sys.implementation.name,
    platform=f"{sys.platform}/{platform.machine()}",
).set(1)

# controller-runtime's work-queue series, labelled by queue name.
_QUEUE_LATENCY = tuple(1e-8 * 10**k for k in range(12))
workqueue_depth = Gauge(
    "workqueue_depth", "Current depth of workqueue", ["name"], registry=REGISTRY
)
workqueue_adds_total = Counter(
    "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"], registry=REGISTRY
)
workqueue_queue_duration_seconds = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name"],
    buckets=_QUEUE_LATENCY,
    registry=REGISTRY,
)
workqueue_work_duration_seconds = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name"],
    buckets=_QUEUE_LATENCY,
    registry=REGISTRY,
)
workqueue_retries_total = Counter(
    "workqueue_retries_total",
    "Total number of retries handled by workqueue",
    ["name"],
    registry=REGISTRY,
)

# controller-runtime's leader gauge: 1 while this process holds the lease.
leader_election_master_status = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 "
    "indicates master. 'name' is the string used to identify the lease.",
    ["name"],
    registry=REGISTRY,
)
