"""Kueue v0.19.2's metrics as its pkg/metrics/metrics.go declares them, copied by hand:
name, type, label names (without custom labels) and histogram buckets."""

from __future__ import annotations

R = "replica_role"
CQ = ("cluster_queue",)
CQ_PC = ("cluster_queue", "priority_class")
LQ = ("name", "namespace")
LQ_PC = ("name", "namespace", "priority_class")
CQ_FR = ("cohort", "cluster_queue", "flavor", "resource")
LQ_FR = ("name", "namespace", "flavor", "resource")
CO_FR = ("cohort", "flavor", "resource")
EVICT = ("cluster_queue", "reason", "underlying_cause", "priority_class")


def exp(count: int) -> tuple[float, ...]:
    return (1.0, *(2.5 * 2**k for k in range(count - 1)))


GO_DEFAULT = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CREATION = tuple(0.01 * 2**k for k in range(11))

C, G, H = "counter", "gauge", "histogram"

KUEUE: dict[str, tuple[str, tuple[str, ...], tuple[float, ...] | None]] = {
    "kueue_admission_attempts_total": (C, ("result", R), None),
    "kueue_admission_attempt_duration_seconds": (H, ("result", R), GO_DEFAULT),
    "multikueue_workloads_dispatched_total": (C, ("cluster_queue", "cluster", R), None),
    "multikueue_workloads_admitted_total": (C, ("cluster_queue", "cluster", R), None),
    "kueue_admission_cycle_preemption_skips": (G, (*CQ, R), None),
    "kueue_build_info": (
        G,
        ("git_version", "git_commit", "build_date", "go_version", "compiler", "platform"),
        None,
    ),
    "kueue_pending_workloads": (G, ("cluster_queue", "status", R), None),
    "kueue_local_queue_pending_workloads": (G, (*LQ, "status", R), None),
    "kueue_finished_workloads": (G, (*CQ, R), None),
    "kueue_local_queue_finished_workloads": (G, (*LQ, R), None),
    "kueue_quota_reserved_workloads_total": (C, (*CQ_PC, R), None),
    "kueue_local_queue_quota_reserved_workloads_total": (C, (*LQ_PC, R), None),
    "kueue_finished_workloads_total": (C, (*CQ_PC, R), None),
    "kueue_local_queue_finished_workloads_total": (C, (*LQ_PC, R), None),
    "kueue_quota_reserved_wait_time_seconds": (H, (*CQ_PC, R), exp(14)),
    "kueue_pods_ready_to_evicted_time_seconds": (
        H,
        ("cluster_queue", "reason", "underlying_cause", R),
        exp(14),
    ),
    "kueue_local_queue_quota_reserved_wait_time_seconds": (H, (*LQ_PC, R), exp(14)),
    "kueue_admitted_workloads_total": (C, (*CQ_PC, R), None),
    "kueue_local_queue_admitted_workloads_total": (C, (*LQ_PC, R), None),
    "kueue_admission_wait_time_seconds": (H, (*CQ_PC, R), exp(16)),
    "kueue_ready_wait_time_seconds": (H, (*CQ_PC, R), exp(14)),
    "kueue_admitted_until_ready_wait_time_seconds": (H, (*CQ_PC, R), exp(14)),
    "kueue_local_queue_admission_wait_time_seconds": (H, (*LQ_PC, R), exp(14)),
    "kueue_admission_checks_wait_time_seconds": (H, (*CQ_PC, R), exp(14)),
    "kueue_local_queue_admission_checks_wait_time_seconds": (H, (*LQ_PC, R), exp(14)),
    "kueue_local_queue_ready_wait_time_seconds": (H, (*LQ_PC, R), exp(14)),
    "kueue_local_queue_admitted_until_ready_wait_time_seconds": (H, (*LQ_PC, R), exp(14)),
    "kueue_workload_creation_latency_seconds": (H, ("job_kind", R), CREATION),
    "kueue_pod_scheduling_gate_removal_seconds": (
        H,
        ("name", "cluster_queue", "is_group", R),
        GO_DEFAULT,
    ),
    "kueue_evicted_workloads_total": (C, (*EVICT, R), None),
    "kueue_replaced_workload_slices_total": (C, (*CQ, R), None),
    "kueue_local_queue_evicted_workloads_total": (
        C,
        (*LQ, "reason", "underlying_cause", "priority_class", R),
        None,
    ),
    "kueue_evicted_workloads_once_total": (C, (*EVICT, R), None),
    "kueue_preempted_workloads_total": (C, ("preempting_cluster_queue", "reason", R), None),
    "kueue_workload_eviction_latency_seconds": (H, ("cluster_queue", "reason", R), exp(14)),
    "kueue_reserving_active_workloads": (G, (*CQ, R), None),
    "kueue_local_queue_reserving_active_workloads": (G, (*LQ, R), None),
    "kueue_admitted_active_workloads": (G, (*CQ, R), None),
    "kueue_local_queue_admitted_active_workloads": (G, (*LQ, R), None),
    "kueue_cluster_queue_status": (G, ("cluster_queue", "status", R), None),
    "kueue_local_queue_status": (G, (*LQ, "active", R), None),
    "kueue_unadmitted_workloads": (G, ("cluster_queue", "reason", "underlying_cause", R), None),
    "kueue_local_queue_unadmitted_workloads": (
        G,
        (*LQ, "cluster_queue", "reason", "underlying_cause", R),
        None,
    ),
    "kueue_cluster_queue_resource_reservation": (G, (*CQ_FR, R), None),
    "kueue_cluster_queue_resource_pending": (G, ("cluster_queue", "resource", R), None),
    "kueue_cluster_queue_resource_usage": (G, (*CQ_FR, R), None),
    "kueue_local_queue_resource_reservation": (G, (*LQ_FR, R), None),
    "kueue_local_queue_resource_usage": (G, (*LQ_FR, R), None),
    "kueue_local_queue_admission_fair_sharing_usage": (G, (*LQ, "cluster_queue", R), None),
    "kueue_cluster_queue_nominal_quota": (G, (*CQ_FR, R), None),
    "kueue_cluster_queue_borrowing_limit": (G, (*CQ_FR, R), None),
    "kueue_cluster_queue_lending_limit": (G, (*CQ_FR, R), None),
    "kueue_cluster_queue_weighted_share": (G, ("cluster_queue", "cohort", R), None),
    "kueue_cohort_weighted_share": (G, ("cohort", R), None),
    "kueue_cohort_subtree_quota": (G, (*CO_FR, R), None),
    "kueue_cohort_subtree_admitted_workloads_total": (C, ("cohort", "priority_class", R), None),
    "kueue_cohort_subtree_resource_reservations": (G, (*CO_FR, R), None),
    "kueue_cohort_subtree_admitted_active_workloads": (G, ("cohort", R), None),
    "kueue_cohort_info": (G, ("cohort", "parent_cohort", "root_cohort", R), None),
    "kueue_cluster_queue_info": (G, ("cluster_queue", "parent_cohort", "root_cohort", R), None),
}
