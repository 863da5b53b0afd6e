"""An admission check that waits for a person: label the Workload to let it start.

``approval.kq.example/decision`` on the Workload decides: ``approved`` makes the check
``Ready``, ``rejected`` ``Rejected`` (kq deactivates the Workload), ``retry`` ``Retry`` (kq
evicts it and queues it again after 5 s, or after the seconds in the AdmissionCheck's
annotation ``approval.kq.example/retry-seconds``). Anything else leaves it ``Pending``.

Written from ``kq/hookspecs.py`` and ``kq.admissionchecks`` alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from kq.admissionchecks import (
    PENDING,
    READY,
    REJECTED,
    RETRY,
    Activity,
    CheckContext,
    CheckUpdate,
    Obj,
    Resource,
)
from kq.hookspecs import Register, hookimpl

CONTROLLER_NAME = "approval.kq.example/manual"
DECISION_LABEL = "approval.kq.example/decision"
RETRY_ANNOTATION = "approval.kq.example/retry-seconds"
DEFAULT_RETRY_SECONDS = 5


class ManualApproval:
    """Ready once a person labels the Workload ``approval.kq.example/decision=approved``."""

    CONTROLLER_NAME: ClassVar[str] = CONTROLLER_NAME
    WATCHES: ClassVar[tuple[Resource, ...]] = ()

    def activity(self, check: Obj, ctx: CheckContext) -> Activity:
        seconds = _annotations(check).get(RETRY_ANNOTATION)
        if seconds is not None and not seconds.isdigit():
            return Activity(
                False,
                "InvalidRetrySeconds",
                f"annotation {RETRY_ANNOTATION} must be a whole number of seconds, got {seconds!r}",
            )
        return Activity.ok()

    async def sync(
        self, workload: Obj, checks: Sequence[Obj], ctx: CheckContext
    ) -> Sequence[CheckUpdate]:
        status = workload.get("status") or {}
        if status.get("admission") is None:
            return []  # nothing to approve until quota is reserved
        decision = (workload["metadata"].get("labels") or {}).get(DECISION_LABEL, "")
        return [_update(check, decision) for check in checks]


def _annotations(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def _update(check: Obj, decision: str) -> CheckUpdate:
    name = check["metadata"]["name"]
    if decision == "approved":
        return CheckUpdate(name, READY, "Approved")
    if decision == "rejected":
        return CheckUpdate(name, REJECTED, "Rejected by a person")
    if decision == "retry":
        seconds = int(_annotations(check).get(RETRY_ANNOTATION, DEFAULT_RETRY_SECONDS))
        return CheckUpdate(name, RETRY, "Asked to try again later", requeue_after_seconds=seconds)
    return CheckUpdate(name, PENDING, f"Waiting for the label {DECISION_LABEL}=approved")


@hookimpl
def kq_register_admission_checks(register: Register) -> None:
    register(ManualApproval)
