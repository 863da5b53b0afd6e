"""Validation of Kueue objects where kq and Kueue differ: allowed, with a warning that says how."""

from __future__ import annotations

from typing import Any

from kq.webhooks.review import Review, allowed, request_kind, request_of

RECLAIM_OUT_OF_COHORT_WARNING = (
    "spec.preemption.reclaimOutOfCohort is not a Kueue field; kq accepts it and does not act on it"
)
NAMESPACE_SELECTOR_WARNING = (
    "spec.namespaceSelector is unset: kq admits workloads from all namespaces "
    "(Kueue admits from none); set it explicitly"
)


def validate_kueue(review: Review) -> Review:
    request = request_of(review)
    warnings: list[str] = []
    api_version, kind = request_kind(request)
    is_create_or_update = request.get("operation") in ("CREATE", "UPDATE")
    if api_version.startswith("kueue.x-k8s.io/") and kind == "ClusterQueue" and is_create_or_update:
        warnings = cluster_queue_warnings(request.get("object") or {})
    return allowed(str(request["uid"]), warnings)


def cluster_queue_warnings(cluster_queue: dict[str, Any]) -> list[str]:
    spec = cluster_queue.get("spec") or {}
    warnings = []
    # GKE's documentation uses this field; the API server keeps it only if the CRD allows it.
    if "reclaimOutOfCohort" in (spec.get("preemption") or {}):
        warnings.append(RECLAIM_OUT_OF_COHORT_WARNING)
    if spec.get("namespaceSelector") is None:
        warnings.append(NAMESPACE_SELECTOR_WARNING)
    return warnings
