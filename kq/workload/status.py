"""Decisions as Workload status patches in the API's own shape (pure; the runtime sends them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kq.api.quantity import format_amount
from kq.api.workload import (
    ADMITTED,
    EVICTED,
    PREEMPTED,
    QUOTA_RESERVED,
    Admission,
    PodSetAssignment,
)


def rfc3339(epoch: float) -> str:
    """Kubernetes' condition time format: whole seconds, UTC, ``Z``."""
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, status: bool, reason: str, message: str, now: float) -> dict[str, Any]:
    return {
        "type": type_,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": rfc3339(now),
    }


def admission_dict(admission: Admission) -> dict[str, Any]:
    """``status.admission`` with quantities in canonical form."""
    return {
        "clusterQueue": admission.cluster_queue,
        "podSetAssignments": [_assignment_dict(psa) for psa in admission.pod_set_assignments],
    }


def _assignment_dict(psa: PodSetAssignment) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": psa.name,
        "flavors": dict(psa.flavors),
        "resourceUsage": {r: format_amount(r, v) for r, v in psa.resource_usage.items()},
        "count": psa.count,
    }
    if psa.topology is not None:
        out["topologyAssignment"] = psa.topology.to_dict()
    return out


def admitted_status(
    admission: Admission, admission_checks: tuple[str, ...], now: float
) -> dict[str, Any]:
    """Quota reserved; ``Admitted=True`` too when no admission check is pending."""
    cq = admission.cluster_queue
    conditions = [
        condition(
            QUOTA_RESERVED, True, "QuotaReserved", f"Quota reserved in ClusterQueue {cq}", now
        )
    ]
    if not admission_checks:
        conditions.append(condition(ADMITTED, True, "Admitted", "The workload is admitted", now))
    else:
        conditions.append(
            condition(
                ADMITTED,
                False,
                "UnsatisfiedAdmissionChecks",
                "The workload has not all checks ready",
                now,
            )
        )
    return {"admission": admission_dict(admission), "conditions": conditions}


def pending_status(reason: str, message: str, now: float) -> dict[str, Any]:
    return {"conditions": [condition(QUOTA_RESERVED, False, reason, message, now)]}


def preempted_status(preempted_reason: str, message: str, now: float) -> dict[str, Any]:
    """The victim's ``Evicted`` (reason Preempted) and ``Preempted`` conditions."""
    return {
        "conditions": [
            condition(EVICTED, True, "Preempted", message, now),
            condition(PREEMPTED, True, preempted_reason, message, now),
        ]
    }
