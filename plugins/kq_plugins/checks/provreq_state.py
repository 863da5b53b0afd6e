"""The ProvisioningRequest check's state on a Workload, from its request's conditions (pure).

Each function takes the check's current entry of ``status.admissionChecks`` and returns the
``CheckUpdate`` to write, or ``None`` when the entry is to stay as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kq.admissionchecks import PENDING, READY, REJECTED, RETRY, CheckUpdate, Obj
from kq_plugins.checks.provreq_build import (
    Config,
    InconsistentAssignments,
    attempt_of,
    merge_pod_sets,
    meta,
    template_name,
)

CHECK_INACTIVE = "the check is not active"
NOT_NEEDED = "the provisioning request is not needed"
RETRY_AFTER_FAILURE = "Retrying after failure: "
RETRY_AFTER_BOOKING_EXPIRED = "Retrying after booking expired: "
CONSUME_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"

ACCEPTED = "Accepted"
PROVISIONED = "Provisioned"
FAILED = "Failed"
BOOKING_EXPIRED = "BookingExpired"
CAPACITY_REVOKED = "CapacityRevoked"

_KEEP: Any = object()


# -- predicates -------------------------------------------------------------------------------


def condition(obj: Mapping[str, Any], kind: str) -> Obj | None:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return next((dict(c) for c in conditions if c.get("type") == kind), None)


def is_true(obj: Mapping[str, Any], kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"


def has_quota(workload: Obj) -> bool:
    reserved = bool((workload.get("status") or {}).get("admission"))
    return reserved and is_true(workload, "QuotaReserved")


def is_finished(workload: Obj) -> bool:
    return is_true(workload, "Finished")


def is_evicted(workload: Obj) -> bool:
    return is_true(workload, "Evicted")


def is_admitted(workload: Obj) -> bool:
    return is_true(workload, "Admitted")


def is_active(workload: Obj) -> bool:
    return (workload.get("spec") or {}).get("active") is not False


def check_state(workload: Obj, name: str) -> Obj | None:
    """The Workload's ``status.admissionChecks`` entry for check ``name``."""
    entries = (workload.get("status") or {}).get("admissionChecks") or ()
    return next((dict(e) for e in entries if e.get("name") == name), None)


def retry_count(current: Mapping[str, Any]) -> int:
    return int(current.get("retryCount") or 0)


# -- updates ----------------------------------------------------------------------------------


def update(
    current: Mapping[str, Any],
    *,
    state: str | None = None,
    message: str | None = None,
    requeue_after: Any = _KEEP,
    pod_set_updates: Any = _KEEP,
) -> CheckUpdate | None:
    """``current`` with the given fields changed; ``None`` if that changes nothing."""
    old = (
        current.get("state") or PENDING,
        current.get("message") or "",
        current.get("requeueAfterSeconds"),
        tuple(current.get("podSetUpdates") or ()),
    )
    new = (
        old[0] if state is None else state,
        old[1] if message is None else message,
        old[2] if requeue_after is _KEEP else requeue_after,
        old[3] if pod_set_updates is _KEEP else tuple(pod_set_updates),
    )
    if new == old:
        return None
    return CheckUpdate(str(current.get("name")), new[0], new[1], new[2], new[3])


def inactive(current: Mapping[str, Any]) -> CheckUpdate | None:
    return update(current, state=PENDING, message=CHECK_INACTIVE)


def not_needed(current: Mapping[str, Any]) -> CheckUpdate | None:
    if current.get("state") == READY:
        return None
    return update(current, state=READY, message=NOT_NEEDED, pod_set_updates=())


def backoff_seconds(retries: int, base: int, cap: int) -> int:
    """The wait before attempt ``retries + 2``: ``base * 2**retries``, at most ``cap`` (0: none).

    The first wait is ``base`` even above ``cap``, as Kueue's backoff steps.
    """
    delay = base
    for _ in range(retries):
        if cap > 0 and delay * 2 > cap:
            return cap
        delay *= 2
    return delay


def from_request(
    current: Mapping[str, Any], request: Obj, workload: Obj, config: Config
) -> CheckUpdate | None:
    """The state the request's conditions put the check in; the first that holds decides."""
    if is_true(request, FAILED):
        return _retry_or_reject(current, request, workload, config, FAILED)
    if is_true(request, CAPACITY_REVOKED):
        # The nodes are gone: deactivating beats leaving replacement pods pending forever.
        if not is_active(workload) or is_finished(workload):
            return None
        return update(current, state=REJECTED, message=_message(request, CAPACITY_REVOKED))
    if is_true(request, BOOKING_EXPIRED):
        # Once admitted, the pods were created; the booking ending is expected.
        if is_admitted(workload):
            return None
        return _retry_or_reject(current, request, workload, config, BOOKING_EXPIRED)
    if is_true(request, PROVISIONED):
        if current.get("state") == READY:
            return None
        updates = pod_set_updates(workload, request, config)
        return update(
            current, state=READY, message=_message(request, PROVISIONED), pod_set_updates=updates
        )
    if is_true(request, ACCEPTED):
        provisioned = condition(request, PROVISIONED)
        if provisioned is None:
            return None
        # Provisioned=False carries the autoscaler's progress or ETA.
        return update(current, state=PENDING, message=str(provisioned.get("message") or ""))
    # Not accepted (yet): an autoscaler that refuses says why in Accepted=False.
    refused = condition(request, ACCEPTED)
    message = str(refused.get("message") or "") if refused is not None else ""
    return update(current, state=PENDING, message=message)


def _message(request: Obj, kind: str) -> str:
    return str((condition(request, kind) or {}).get("message") or "")


def _retry_or_reject(
    current: Mapping[str, Any], request: Obj, workload: Obj, config: Config, kind: str
) -> CheckUpdate | None:
    name = str(meta(request).get("name"))
    attempt = attempt_of(name, str(meta(workload).get("name")), str(current.get("name"))) or 1
    message = _message(request, kind)
    if attempt > config.backoff_limit:
        return update(current, state=REJECTED, message=message)
    prefix = RETRY_AFTER_FAILURE if kind == FAILED else RETRY_AFTER_BOOKING_EXPIRED
    retries = retry_count(current)
    if attempt <= retries:
        # An attempt already retried: the eviction has counted it, the next one is due.
        return update(current, message=prefix + message)
    delay = backoff_seconds(retries, config.backoff_base, config.backoff_max)
    return update(current, state=RETRY, message=prefix + message, requeue_after=delay)


def may_create(request: Obj | None, state: str, workload: Obj) -> bool:
    """Whether a new attempt is due: none yet, or the last one failed or lost its booking
    before admission, while the check waits in ``Pending``."""
    if state != PENDING:
        return False
    if request is None:
        return True
    return is_true(request, FAILED) or (
        is_true(request, BOOKING_EXPIRED) and not is_admitted(workload)
    )


def next_attempt(request: Obj | None, current: Mapping[str, Any], workload: Obj) -> int:
    if request is None:
        # A deleted earlier request leaves its count on the check.
        return retry_count(current) + 1
    name = str(meta(request).get("name"))
    return (attempt_of(name, str(meta(workload).get("name")), str(current.get("name"))) or 1) + 1


def pod_set_updates(workload: Obj, request: Obj, config: Config) -> list[Obj]:
    """Per Workload pod set in the request: the annotations that let its pods consume the
    capacity, and node labels the config reads from ``provisioningClassDetails``."""
    name = str(meta(request).get("name"))
    spec = request.get("spec") or {}
    details = (request.get("status") or {}).get("provisioningClassDetails") or {}
    selector = {key: str(details[d]) for key, d in config.node_selector if d in details}
    members = _members(workload, name, config)
    out: list[Obj] = []
    for entry in spec.get("podSets") or ():
        ref = str((entry.get("podTemplateRef") or {}).get("name"))
        for pod_set in members.get(ref, ()):
            found: Obj = {
                "name": pod_set,
                "annotations": {
                    CONSUME_ANNOTATION: name,
                    CLASS_ANNOTATION: str(spec.get("provisioningClassName") or ""),
                },
            }
            if selector:
                found["nodeSelector"] = dict(selector)
            out.append(found)
    return out


def _members(workload: Obj, request: str, config: Config) -> dict[str, Sequence[str]]:
    """Workload pod sets by the PodTemplate name their entry has: merged ones share one."""
    pod_sets = (workload.get("spec") or {}).get("podSets") or ()
    out: dict[str, Sequence[str]] = {
        template_name(request, str(ps.get("name"))): (str(ps.get("name")),) for ps in pod_sets
    }
    try:
        groups = merge_pod_sets(workload, config)
    except InconsistentAssignments:
        return out
    out.update({template_name(request, g.name): g.members for g in groups})
    return out
