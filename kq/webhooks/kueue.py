"""Validation of Kueue objects where kq and Kueue differ: allowed with a warning that says how,
and a Workload's ``status.admission`` written by kq alone; and of kq's own Budgets."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from kq.api.priority import PRIORITY_BOOST_ANNOTATION, boost_error
from kq.budgets import GROUP as BUDGETS_GROUP
from kq.webhooks.budgets import validate_budget
from kq.webhooks.review import Handler, Review, allowed, denied, request_kind, request_of

RECLAIM_OUT_OF_COHORT_WARNING = (
    "spec.preemption.reclaimOutOfCohort is not a Kueue field; kq accepts it and does not act on it"
)
FAIR_SHARING_WARNING = (
    "spec.fairSharing is kept but not used: fair sharing is off in kq's configuration "
    "(fairSharing.enable in v1beta1, a fairSharing section in v1beta2)"
)
ADMISSION_SCOPE_WARNING = (
    "spec.admissionScope is kept but not used: admission fair sharing is off in kq's "
    "configuration (no admissionFairSharing section, or featureGates.AdmissionFairSharing: false)"
)
NAMESPACE_SELECTOR_WARNING = (
    "spec.namespaceSelector is unset: kq admits workloads from all namespaces "
    "(Kueue admits from none); set it explicitly"
)


def kueue_validator(
    admission_writers: Collection[str] | None,
    fair_sharing: bool = False,
    admission_fair_sharing: bool = False,
    priority_boost: bool = False,
) -> Handler:
    """``admission_writers``: the users who may change a Workload's ``status.admission``
    (kq's own identity); None lets anyone, as Kueue does. ``fair_sharing``: whether it is on,
    so that weights are used; ``admission_fair_sharing``: so that admission scopes are;
    ``priority_boost``: the gate, under which a Workload's boost must parse, as Kueue's."""

    def validate(review: Review) -> Review:
        request = request_of(review)
        uid = str(request["uid"])
        api_version, kind = request_kind(request)
        if api_version.startswith(f"{BUDGETS_GROUP}/"):
            return validate_budget(uid, request)
        if not api_version.startswith("kueue.x-k8s.io/"):
            return allowed(uid)
        if kind == "Workload" and admission_writers is not None:
            refusal = _admission_refusal(request, admission_writers)
            if refusal is not None:
                return denied(uid, refusal)
        if request.get("operation") not in ("CREATE", "UPDATE"):
            return allowed(uid)
        if kind == "Workload" and priority_boost:
            refusal = _boost_refusal(request.get("object") or {})
            if refusal is not None:
                return denied(uid, refusal)
        spec = (request.get("object") or {}).get("spec") or {}
        unused = [FAIR_SHARING_WARNING] if "fairSharing" in spec and not fair_sharing else []
        if kind == "ClusterQueue":
            if "admissionScope" in spec and not admission_fair_sharing:
                unused.append(ADMISSION_SCOPE_WARNING)
            return allowed(uid, cluster_queue_warnings(request.get("object") or {}) + unused)
        if kind == "Cohort" and unused:
            return allowed(uid, unused)
        return allowed(uid)

    return validate


validate_kueue = kueue_validator(None)


def _admission_refusal(request: dict[str, Any], writers: Collection[str]) -> str | None:
    if request.get("operation") != "UPDATE" or request.get("subResource") != "status":
        return None
    user = str((request.get("userInfo") or {}).get("username", ""))
    if user in writers:
        return None
    old = ((request.get("oldObject") or {}).get("status") or {}).get("admission")
    new = ((request.get("object") or {}).get("status") or {}).get("admission")
    if old == new:
        return None
    return (
        f"status.admission is written by kq only: {user or 'this user'} may not set, change "
        "or clear it"
    )


def _boost_refusal(workload: dict[str, Any]) -> str | None:
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    if PRIORITY_BOOST_ANNOTATION not in annotations:
        return None
    value = annotations[PRIORITY_BOOST_ANNOTATION]
    error = boost_error(value) if isinstance(value, str) else "must be a string"
    if error is None:
        return None
    return f"metadata.annotations[{PRIORITY_BOOST_ANNOTATION}]: Invalid value: {value!r}: {error}"


def cluster_queue_warnings(cluster_queue: dict[str, Any]) -> list[str]:
    spec = cluster_queue.get("spec") or {}
    warnings = []
    # GKE's documentation uses this field; the API server keeps it only if the CRD allows it.
    if "reclaimOutOfCohort" in (spec.get("preemption") or {}):
        warnings.append(RECLAIM_OUT_OF_COHORT_WARNING)
    if spec.get("namespaceSelector") is None:
        warnings.append(NAMESPACE_SELECTOR_WARNING)
    return warnings
