"""What Kueue's workload controller does next to one Workload, as a pure decision.

Admission checks, deactivation and requeue back-off, in upstream's order: one step per call,
the I/O side writes it and the watch event of that write brings the next call.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kq.api.timestamps import parse_time
from kq.api.workload import ADMITTED, EVICTED, FINISHED, QUOTA_RESERVED, REQUEUED
from kq.controllers import timeouts
from kq.controllers.patches import conditions_of, find, is_true, merge_conditions
from kq.controllers.steps import DEACTIVATION_TARGET, Event, Facts, Step, Wait, Write, evict
from kq.workload import checks
from kq.workload.status import condition, rfc3339

Object = dict[str, Any]

DEACTIVATED = "Deactivated"
BY_ADMISSION_CHECK = "AdmissionCheck"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"
PODS_READY_TIMEOUT = "PodsReadyTimeout"
_BACKOFF_REASONS = (BY_ADMISSION_CHECK, PODS_READY_TIMEOUT)


def next_step(obj: Mapping[str, Any], facts: Facts, now: float) -> Step:
    """The one thing to do now."""
    current = conditions_of(obj)
    if _orphaned(obj):
        return _orphan(obj, current, now)
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
        return _requeue(obj, current, requeue_at, facts, now)
    step = _reserved(obj, current, states, facts.required, now)
    if step is not None or is_true(current, EVICTED) or not is_true(current, ADMITTED):
        return step
    return _stopped(current, states, facts, now) or timeouts.admitted(obj, current, facts, now)


def _orphaned(obj: Mapping[str, Any]) -> bool:
    """A Workload that was made for a job whose owner reference is gone (the job was deleted
    with orphan propagation), or one being deleted without an owner (FinishOrphanedWorkloads)."""
    meta = obj.get("metadata") or {}
    if meta.get("ownerReferences"):
        return False
    return meta.get("deletionTimestamp") is not None or bool(
        (meta.get("labels") or {}).get(JOB_UID_LABEL)
    )


def _orphan(obj: Mapping[str, Any], current: list[Object], now: float) -> Step:
    """Finished (its quota released), then its finalizer dropped so it can go."""
    meta = obj.get("metadata") or {}
    if meta.get("deletionTimestamp") is None and not is_true(current, FINISHED):
        message = "The workload's owner no longer exists"
        finished = condition(FINISHED, True, "OwnerNotFound", message, now)
        return Write({"status": {"conditions": merge_conditions(current, [finished])}})
    finalizers = list(meta.get("finalizers") or ())
    if RESOURCE_IN_USE in finalizers:
        kept = [f for f in finalizers if f != RESOURCE_IN_USE]
        return Write({"metadata": {"finalizers": kept or None}}, status=False)
    return None


def _requeue_at(status: Mapping[str, Any]) -> float | None:
    return parse_time((status.get("requeueState") or {}).get("requeueAt"))


def _requeue(
    obj: Mapping[str, Any],
    current: list[Object],
    requeue_at: float | None,
    facts: Facts,
    now: float,
) -> Step:
    """Back-off over, reactivated or its queue restarted: the Workload may queue again."""
    requeued = find(current, REQUEUED) or {}
    if requeued.get("status") != "False":
        return None
    reason = str(requeued.get("reason", ""))
    restarted = {
        DEACTIVATED: ("Reactivated", "The workload was reactivated"),
        "ClusterQueueStopped": (
            "ClusterQueueRestarted",
            "The ClusterQueue was restarted after being stopped",
        ),
        "LocalQueueStopped": (
            "LocalQueueRestarted",
            "The LocalQueue was restarted after being stopped",
        ),
    }
    key = DEACTIVATED if reason.startswith(DEACTIVATED) else reason
    stopped = {
        "ClusterQueueStopped": facts.cluster_queue_stop,
        "LocalQueueStopped": facts.local_queue_stop,
    }
    if key in restarted and stopped.get(key, "None") == "None":
        update = condition(REQUEUED, True, *restarted[key], now)
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
        return evict(current, states, BY_ADMISSION_CHECK, message, now)
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
        return evict(current, states, reason, message, now, clear=True)
    if target is not None or status.get("requeueState") is not None:
        kept = [c for c in current if c.get("type") != DEACTIVATION_TARGET]
        return Write({"status": {"conditions": kept, "requeueState": None}})
    return None


def _stopped(current: list[Object], states: list[checks.State], facts: Facts, now: float) -> Step:
    """``stopPolicy: HoldAndDrain`` evicts what its queue admitted (``Hold`` only holds)."""
    if facts.local_queue_stop == "HoldAndDrain":
        return evict(current, states, "LocalQueueStopped", "The LocalQueue is stopped", now)
    if facts.cluster_queue_stop == "HoldAndDrain":
        return evict(current, states, "ClusterQueueStopped", "The ClusterQueue is stopped", now)
    return None
