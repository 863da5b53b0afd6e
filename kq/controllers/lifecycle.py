"""What Kueue's workload controller does next to one Workload, as a pure decision.

Admission checks, deactivation and requeue back-off, in upstream's order: one step per call,
the I/O side writes it and the watch event of that write brings the next call.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kq.api.timestamps import parse_time
from kq.api.workload import ADMITTED, EVICTED, FINISHED, QUOTA_RESERVED, REQUEUED
from kq.config import WaitForPodsReady
from kq.controllers.patches import conditions_of, find, is_true, merge_conditions
from kq.workload import checks
from kq.workload.status import condition, rfc3339

Object = dict[str, Any]

DEACTIVATION_TARGET = "DeactivationTarget"
DEACTIVATED = "Deactivated"
BY_ADMISSION_CHECK = "AdmissionCheck"
PODS_READY_TIMEOUT = "PodsReadyTimeout"
PODS_READY = "PodsReady"
REQUEUING_LIMIT = "RequeuingLimitExceeded"
_BACKOFF_REASONS = (BY_ADMISSION_CHECK, PODS_READY_TIMEOUT)


@dataclass(frozen=True, slots=True)
class Event:
    reason: str
    message: str
    warning: bool = False


@dataclass(frozen=True, slots=True)
class Write:
    """A merge patch of ``/status`` (or of the object itself) and the Events that follow it."""

    patch: Object
    status: bool = True
    events: tuple[Event, ...] = ()
    admitted_after: float | None = None
    """Set when the write admits: seconds since quota was reserved (for the metrics)."""
    evicted: str | None = None
    """Set when the write evicts: the eviction reason (for the metrics)."""


@dataclass(frozen=True, slots=True)
class Wait:
    seconds: float


Step = Write | Wait | None


def next_step(
    obj: Mapping[str, Any],
    required: Collection[str] | None,
    now: float,
    pods_ready: WaitForPodsReady | None = None,
) -> Step:
    """The one thing to do now; ``required``: the checks its ClusterQueue asks of its
    admission (``None`` while that ClusterQueue is unknown); ``pods_ready``: the
    waitForPodsReady configuration, when enabled."""
    current = conditions_of(obj)
    if is_true(current, FINISHED):
        return None
    status = obj.get("status") or {}
    states = checks.states_of(obj)
    requeue_at = _requeue_at(status)
    retry_until = checks.retry_time(states)
    if retry_until is not None and retry_until > now and (requeue_at or 0.0) < retry_until:
        requeue = {**(status.get("requeueState") or {}), "requeueAt": rfc3339(retry_until)}
        return Write({"status": {"requeueState": requeue}})
    if (obj.get("spec") or {}).get("active", True) is False:
        return _inactive(obj, current, states, now)
    if is_true(current, DEACTIVATION_TARGET):
        return Write({"spec": {"active": False}}, status=False)
    reserved = status.get("admission") is not None and is_true(current, QUOTA_RESERVED)
    if not reserved:
        return _requeue(obj, current, requeue_at, now)
    step = _reserved(obj, current, states, required, now)
    if step is None and pods_ready is not None:
        return _pods_ready_timeout(obj, current, states, pods_ready, now)
    return step


def _requeue_at(status: Mapping[str, Any]) -> float | None:
    return parse_time((status.get("requeueState") or {}).get("requeueAt"))


def _requeue(
    obj: Mapping[str, Any], current: list[Object], requeue_at: float | None, now: float
) -> Step:
    """Back-off over: the Workload may enter its queue again (``Requeued=True``)."""
    requeued = find(current, REQUEUED) or {}
    if requeued.get("status") != "False":
        return None
    reason = str(requeued.get("reason", ""))
    if reason.startswith(DEACTIVATED):
        update = condition(REQUEUED, True, "Reactivated", "The workload was reactivated", now)
        return Write({"status": {"conditions": merge_conditions(current, [update])}})
    if reason not in _BACKOFF_REASONS:
        return None
    if requeue_at is not None and requeue_at > now:
        return Wait(requeue_at - now)
    update = condition(REQUEUED, True, "BackoffFinished", "The workload backoff was finished", now)
    patch: Object = {"conditions": merge_conditions(current, [update])}
    if requeue_at is not None:
        patch["requeueState"] = {**(obj["status"].get("requeueState") or {}), "requeueAt": None}
    return Write({"status": patch})


def _reserved(
    obj: Mapping[str, Any],
    current: list[Object],
    states: list[checks.State],
    required: Collection[str] | None,
    now: float,
) -> Step:
    if required is None:
        return None  # its ClusterQueue is not known yet: which checks apply is not either
    new_states = checks.synced(states, required, now)
    if new_states is not None:
        return Write({"status": {"admissionChecks": new_states}})
    if not is_true(current, ADMITTED) and checks.all_ready(states):
        return _admit(obj, current, now)
    if is_true(current, EVICTED):
        return None
    rejected = checks.in_state(states, checks.REJECTED)
    if rejected:
        message = checks.checks_message(rejected, checks.REJECTED)
        target = condition(DEACTIVATION_TARGET, True, BY_ADMISSION_CHECK, message, now)
        return Write(
            {"status": {"conditions": merge_conditions(current, [target])}},
            events=(Event("AdmissionCheckRejected", f"Deactivated due to {message}", True),),
        )
    retry = checks.in_state(states, checks.RETRY)
    if retry:
        message = f"Evicted due to {checks.checks_message(retry, checks.RETRY)}"
        return _evict(current, states, BY_ADMISSION_CHECK, message, now)
    return None


def _admit(obj: Mapping[str, Any], current: list[Object], now: float) -> Write:
    cq = str(obj["status"]["admission"].get("clusterQueue", ""))
    reserved_at = parse_time((find(current, QUOTA_RESERVED) or {}).get("lastTransitionTime"))
    waited = max(0.0, now - reserved_at) if reserved_at is not None else 0.0
    admitted = condition(ADMITTED, True, "Admitted", "The workload is admitted", now)
    message = f"Admitted by ClusterQueue {cq}, wait time since reservation was {waited:.0f}s"
    return Write(
        {"status": {"conditions": merge_conditions(current, [admitted])}},
        events=(Event("Admitted", message),),
        admitted_after=waited,
    )


def _inactive(
    obj: Mapping[str, Any], current: list[Object], states: list[checks.State], now: float
) -> Step:
    """``spec.active=false``: evicted (with the cause that deactivated it), back-off cleared."""
    status = obj.get("status") or {}
    target = find(current, DEACTIVATION_TARGET)
    reserved = status.get("admission") is not None and is_true(current, QUOTA_RESERVED)
    if reserved and not is_true(current, EVICTED):
        reason, message = DEACTIVATED, "The workload is deactivated"
        if target is not None:
            reason = f"{DEACTIVATED}DueTo{target.get('reason', '')}"
            message = f"{message} due to {target.get('message', '')}"
        return _evict(current, states, reason, message, now, clear=True)
    if target is not None or status.get("requeueState") is not None:
        kept = [c for c in current if c.get("type") != DEACTIVATION_TARGET]
        return Write({"status": {"conditions": kept, "requeueState": None}})
    return None


def _evict(
    current: list[Object],
    states: list[checks.State],
    reason: str,
    message: str,
    now: float,
    *,
    clear: bool = False,
) -> Write:
    """``Evicted=True`` with every check back to Pending, as Kueue's ``prepareForEviction``;
    ``clear`` also drops the deactivation target and the back-off (deactivation)."""
    if clear:
        current = [c for c in current if c.get("type") != DEACTIVATION_TARGET]
    evicted = condition(EVICTED, True, reason, message, now)
    patch: Object = {"conditions": merge_conditions(current, [evicted])}
    if states:
        patch["admissionChecks"] = checks.reset_on_eviction(states, now)
    if clear:
        patch["requeueState"] = None
    return Write(
        {"status": patch},
        events=(Event(f"EvictedDueTo{reason}", message),),
        evicted=reason,
    )


def _pods_ready_timeout(
    obj: Mapping[str, Any],
    current: list[Object],
    states: list[checks.State],
    config: WaitForPodsReady,
    now: float,
) -> Step:
    """An admitted Workload whose pods are not ready in time is evicted and backs off, or,
    past ``backoffLimitCount`` requeues, deactivated (Kueue's ``reconcileNotReadyTimeout``)."""
    if not is_true(current, ADMITTED) or is_true(current, EVICTED):
        return None
    ready = find(current, PODS_READY) or {}
    if ready.get("status") == "True":
        return None
    if ready.get("reason") in (None, "WaitForStart", "PodsReady"):
        since, timeout = find(current, ADMITTED) or {}, config.timeout
    elif ready.get("reason") == "WaitForRecovery" and config.recovery_timeout is not None:
        since, timeout = ready, config.recovery_timeout
    else:
        return None
    started = parse_time(since.get("lastTransitionTime")) or now
    if started + timeout > now:
        return Wait(started + timeout - now)
    strategy = config.requeuing_strategy
    requeue = obj["status"].get("requeueState") or {}
    count = int(requeue.get("count") or 0) + 1
    limit = strategy.backoff_limit_count
    if limit is not None and count > limit:
        message = "exceeding the maximum number of re-queuing retries"
        target = condition(DEACTIVATION_TARGET, True, REQUEUING_LIMIT, message, now)
        return Write({"status": {"conditions": merge_conditions(current, [target])}})
    meta = obj.get("metadata") or {}
    message = f"Exceeded the PodsReady timeout {meta.get('namespace')}/{meta.get('name')}"
    step = _evict(current, states, PODS_READY_TIMEOUT, message, now)
    delay = checks.backoff(count, strategy.backoff_base_seconds, strategy.backoff_max_seconds)
    step.patch["status"]["requeueState"] = {"count": count, "requeueAt": rfc3339(now + delay)}
    return step
