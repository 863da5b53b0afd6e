"""Prometheus metrics under Kueue v0.19's names, types, labels and buckets, on kq's registry.

Dashboards and alerts written for Kueue read ``kueue_*`` series; the work-queue series use
controller-runtime's names. ``_created`` series are off because Go's client has none. Every
series carries ``replica_role`` (``leader``, ``follower`` or ``standalone``) as Kueue's do.

Kueue metrics kq never sets are not registered; ``NOT_PRODUCED`` names them with the reason.
The LocalQueue series are registered only with ``metrics.localQueueMetrics.enable`` and the
per-flavor ClusterQueue quota series only with ``metrics.enableClusterQueueResources``, the
two options Kueue reports them under.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Iterable, Sequence

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Metric

from kq import __version__

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

REGISTRY = CollectorRegistry(auto_describe=True)
KUEUE = "kueue"
ROLE = "replica_role"
STANDALONE, LEADER, FOLLOWER = "standalone", "leader", "follower"

# Go's prometheus.DefBuckets: Kueue's histograms without explicit buckets use these.
GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def exponential_buckets(count: int) -> tuple[float, ...]:
    """Kueue's ``generateExponentialBuckets``: 1, then 2.5 doubling, ``count`` in all."""
    return (1.0, *(2.5 * 2**k for k in range(count - 1)))


NOT_PRODUCED = {
    "multikueue_workloads_dispatched_total": "kq has no MultiKueue",
    "multikueue_workloads_admitted_total": "kq has no MultiKueue",
    "kueue_replaced_workload_slices_total": "kq has no elastic workload slices",
    "kueue_unadmitted_workloads": "behind UnadmittedWorkloadsObservability, a gate kq refuses",
    "kueue_local_queue_unadmitted_workloads": "behind UnadmittedWorkloadsObservability",
}
"""Kueue v0.19 metrics kq does not expose, and why."""

CQ, LQ_NAME, LQ_NS = "cluster_queue", "name", "namespace"
PC = "priority_class"
_CQ_PC = (CQ, PC)
_CQ_RESOURCE = ("cohort", CQ, "flavor", "resource")
_COHORT_FR = ("cohort", "flavor", "resource")

_Registry = CollectorRegistry | None


class Unchecked:
    """A metric registered without its names: Kueue has a gauge ``X`` beside a counter
    ``X_total``, and prometheus_client's duplicate check counts the counter as ``X`` too.
    The exposition names them apart (the counter's lines say ``X_total``)."""

    def __init__(self, metric: Gauge) -> None:
        self._metric = metric

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        return self._metric.collect()


def counter(name: str, doc: str, labels: Sequence[str], registry: _Registry = REGISTRY) -> Counter:
    return Counter(name, doc, [*labels, ROLE], subsystem=KUEUE, registry=registry)


def gauge(name: str, doc: str, labels: Sequence[str], registry: _Registry = REGISTRY) -> Gauge:
    return Gauge(name, doc, [*labels, ROLE], subsystem=KUEUE, registry=registry)


def histogram(
    name: str,
    doc: str,
    labels: Sequence[str],
    buckets: Sequence[float],
    registry: _Registry = REGISTRY,
) -> Histogram:
    return Histogram(
        name, doc, [*labels, ROLE], subsystem=KUEUE, buckets=buckets, registry=registry
    )


# -- scheduler ---------------------------------------------------------------------------
admission_attempts_total = counter(
    "admission_attempts_total",
    "Admission attempts (cycles with heads), by result: success if one workload got in.",
    ["result"],
)
admission_attempt_duration_seconds = histogram(
    "admission_attempt_duration_seconds",
    "Latency of an admission attempt, by result.",
    ["result"],
    GO_DEFAULT_BUCKETS,
)

# -- job framework ---------------------------------------------------------------------
workload_creation_latency_seconds = histogram(
    "workload_creation_latency_seconds",
    "Seconds from a job's creation until its Workload's, per job_kind (jobs of generation 1).",
    ["job_kind"],
    tuple(0.01 * 2**k for k in range(11)),  # Go's ExponentialBuckets(0.01, 2, 11)
)

admission_cycle_preemption_skips = gauge(
    "admission_cycle_preemption_skips",
    "Heads of the cluster_queue with preemption candidates skipped in the last cycle that had "
    "any, because another ClusterQueue needed the same resources.",
    [CQ],
)

# -- ClusterQueue ------------------------------------------------------------------------
pending_workloads = gauge(
    "pending_workloads",
    "Pending workloads per cluster_queue, active or inadmissible.",
    [CQ, "status"],
)
finished_workloads = gauge(
    "finished_workloads", "Finished workloads still present, per cluster_queue.", [CQ], None
)
REGISTRY.register(Unchecked(finished_workloads))
quota_reserved_workloads_total = counter(
    "quota_reserved_workloads_total",
    "Workloads that got quota reserved, per cluster_queue.",
    _CQ_PC,
)
finished_workloads_total = counter(
    "finished_workloads_total", "Workloads that finished, per cluster_queue.", _CQ_PC
)
quota_reserved_wait_time_seconds = histogram(
    "quota_reserved_wait_time_seconds",
    "Seconds from creation or requeue until quota reservation, per cluster_queue.",
    _CQ_PC,
    exponential_buckets(14),
)
pods_ready_to_evicted_time_seconds = histogram(
    "pods_ready_to_evicted_time_seconds",
    "Seconds from a workload's pods being ready until its eviction, per cluster_queue.",
    [CQ, "reason", "underlying_cause"],
    exponential_buckets(14),
)
admitted_workloads_total = counter(
    "admitted_workloads_total", "Admitted workloads, per cluster_queue.", _CQ_PC
)
admission_wait_time_seconds = histogram(
    "admission_wait_time_seconds",
    "Seconds from creation or requeue until admission, per cluster_queue.",
    _CQ_PC,
    exponential_buckets(16),
)
ready_wait_time_seconds = histogram(
    "ready_wait_time_seconds",
    "Seconds from creation or requeue until the pods are ready, per cluster_queue.",
    _CQ_PC,
    exponential_buckets(14),
)
admitted_until_ready_wait_time_seconds = histogram(
    "admitted_until_ready_wait_time_seconds",
    "Seconds from admission until the pods are ready, per cluster_queue.",
    _CQ_PC,
    exponential_buckets(14),
)
admission_checks_wait_time_seconds = histogram(
    "admission_checks_wait_time_seconds",
    "Seconds from quota reservation until admission, per cluster_queue.",
    _CQ_PC,
    exponential_buckets(14),
)
_EVICTION = [CQ, "reason", "underlying_cause", PC]
evicted_workloads_total = counter(
    "evicted_workloads_total", "Evictions per cluster_queue, reason and cause.", _EVICTION
)
evicted_workloads_once_total = counter(
    "evicted_workloads_once_total",
    "Workloads evicted for a reason and cause for the first time, per cluster_queue.",
    _EVICTION,
)
preempted_workloads_total = counter(
    "preempted_workloads_total",
    "Preempted workloads, per preempting_cluster_queue and reason.",
    ["preempting_cluster_queue", "reason"],
)
# Timed where kq removes the kueue.x-k8s.io/topology gate (kq.controllers.pods).
pod_scheduling_gate_removal_seconds = histogram(
    "pod_scheduling_gate_removal_seconds",
    "Seconds from a Workload's admission until a pod's scheduling gate was removed.",
    ["name", CQ, "is_group"],
    GO_DEFAULT_BUCKETS,
)
workload_eviction_latency_seconds = histogram(
    "workload_eviction_latency_seconds",
    "Seconds from eviction until the workload's quota was released, per cluster_queue.",
    [CQ, "reason"],
    exponential_buckets(14),
)
reserving_active_workloads = gauge(
    "reserving_active_workloads", "Workloads holding quota, per cluster_queue.", [CQ]
)
admitted_active_workloads = gauge(
    "admitted_active_workloads", "Admitted workloads that are active, per cluster_queue.", [CQ]
)
cluster_queue_status = gauge(
    "cluster_queue_status",
    "1 for the cluster_queue's current status (pending, active or terminating).",
    [CQ, "status"],
)
cluster_queue_resource_pending = gauge(
    "cluster_queue_resource_pending",
    "Requests of the cluster_queue's pending workloads, per resource (no flavor yet).",
    [CQ, "resource"],
)
cluster_queue_weighted_share = gauge(
    "cluster_queue_weighted_share",
    "The ClusterQueue's share of borrowed resources under fair sharing, over its weight "
    "(NaN when a zero weight borrows).",
    [CQ, "cohort"],
)
cluster_queue_info = gauge(
    "cluster_queue_info",
    "1 per cluster_queue with its parent and root cohort.",
    [CQ, "parent_cohort", "root_cohort"],
)

# -- Cohort ------------------------------------------------------------------------------
cohort_weighted_share = gauge(
    "cohort_weighted_share",
    "The Cohort's share of borrowed resources under fair sharing, over its weight.",
    ["cohort"],
)
cohort_subtree_quota = gauge(
    "cohort_subtree_quota", "Nominal quota within the cohort's subtree.", _COHORT_FR
)
cohort_subtree_admitted_workloads_total = counter(
    "cohort_subtree_admitted_workloads_total",
    "Admitted workloads in the cohort's subtree.",
    ["cohort", PC],
)
cohort_subtree_resource_reservations = gauge(
    "cohort_subtree_resource_reservations",
    "Quota reserved within the cohort's subtree.",
    _COHORT_FR,
)
cohort_subtree_admitted_active_workloads = gauge(
    "cohort_subtree_admitted_active_workloads",
    "Admitted active workloads within the cohort's subtree.",
    ["cohort"],
)
cohort_info = gauge(
    "cohort_info",
    "1 per cohort with its parent and root.",
    ["cohort", "parent_cohort", "root_cohort"],
)

# -- optional: per-flavor ClusterQueue quotas (metrics.enableClusterQueueResources) --------
cluster_queue_resource_reservation = gauge(
    "cluster_queue_resource_reservation",
    "Quota reserved, per flavor and resource.",
    _CQ_RESOURCE,
    None,
)
cluster_queue_resource_usage = gauge(
    "cluster_queue_resource_usage", "Quota used by admitted workloads.", _CQ_RESOURCE, None
)
cluster_queue_nominal_quota = gauge(
    "cluster_queue_nominal_quota", "Nominal quota, per flavor and resource.", _CQ_RESOURCE, None
)
cluster_queue_borrowing_limit = gauge(
    "cluster_queue_borrowing_limit", "Borrowing limit (+Inf when unset).", _CQ_RESOURCE, None
)
cluster_queue_lending_limit = gauge(
    "cluster_queue_lending_limit", "Lending limit (+Inf when unset).", _CQ_RESOURCE, None
)
CLUSTER_QUEUE_RESOURCES = (
    cluster_queue_resource_reservation,
    cluster_queue_resource_usage,
    cluster_queue_nominal_quota,
    cluster_queue_borrowing_limit,
    cluster_queue_lending_limit,
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

# kq's own: Events the recorder never wrote, by why (queue_full, spam, error). client-go drops
# these silently; a count lets an operator tell a quiet controller from a muted one.
events_dropped_total = Counter(
    "kq_events_dropped_total",
    "Events not written to the API server, by reason",
    ["reason"],
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


ROLE_GAUGES = (
    admission_cycle_preemption_skips,
    pending_workloads,
    finished_workloads,
    reserving_active_workloads,
    admitted_active_workloads,
    cluster_queue_status,
    cluster_queue_resource_pending,
    cluster_queue_weighted_share,
    cluster_queue_info,
    cohort_weighted_share,
    cohort_subtree_quota,
    cohort_subtree_resource_reservations,
    cohort_subtree_admitted_active_workloads,
    cohort_info,
    *CLUSTER_QUEUE_RESOURCES,
)
"""Gauges labelled with the replica's role, dropped when the role changes."""
