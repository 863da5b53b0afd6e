"""Workload status patches computed from the object the informer holds (pure).

A JSON merge patch replaces ``status.conditions`` whole, so every patch carries the full list:
the current conditions with ours upserted, keeping ``lastTransitionTime`` when the status does
not change, as ``meta.SetStatusCondition`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kq.api.workload import (
    ADMITTED,
    EVICTED,
    FINISHED,
    PREEMPTED,
    QUOTA_RESERVED,
    REQUEUE_AT_ONCE,
    REQUEUED,
    UNTRUSTED_ADMISSION,
    WAITING_FOR_QUOTA,
)
from kq.scheduler.cycle import PASSING_WORDS
from kq.scheduler.decisions import Admit, Victim
from kq.workload.checks import states_of, synced
from kq.workload.status import admitted_status, condition, pending_status, preempted_status

Object = dict[str, Any]


def conditions_of(obj: Mapping[str, Any]) -> list[Object]:
    return list((obj.get("status") or {}).get("conditions") or ())


def find(conditions: Iterable[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == type_), None)


def is_true(conditions: Iterable[Mapping[str, Any]], type_: str) -> bool:
    found = find(conditions, type_)
    return found is not None and found.get("status") == "True"


def merge_conditions(current: list[Object], updates: Iterable[Object]) -> list[Object]:
    out = [dict(c) for c in current]
    for new in updates:
        for i, old in enumerate(out):
            if old.get("type") == new["type"]:
                merged = {**old, **new}
                if old.get("status") == new["status"] and old.get("lastTransitionTime"):
                    merged["lastTransitionTime"] = old["lastTransitionTime"]
                out[i] = merged
                break
        else:
            out.append(dict(new))
    return out


def admit_patch(obj: Mapping[str, Any], decision: Admit, now: float) -> Object:
    """``status.admission`` and QuotaReserved (+ Admitted); a past eviction flips to False."""
    current = conditions_of(obj)
    status = admitted_status(decision.admission, decision.admission_checks, now)
    updates: list[Object] = status["conditions"]
    for type_ in (EVICTED, PREEMPTED):
        old = find(current, type_)
        if old is not None and old.get("status") == "True":
            previously = f"Previously: {old.get('message', '')}"
            updates.append(condition(type_, False, "QuotaReserved", previously, now))
    out: Object = {
        "admission": status["admission"],
        "conditions": merge_conditions(current, updates),
    }
    # The checks go Pending in the same write, where Kueue's workload controller adds them in
    # a second one: one write fewer per admission.
    checks = synced(states_of(obj), decision.admission_checks, now)
    if checks is not None:
        out["admissionChecks"] = checks
    return {"status": out}


def pending_patch(obj: Mapping[str, Any], reason: str, message: str, now: float) -> Object | None:
    """``QuotaReserved=False`` with the scheduler's words; None when it already says so, or
    when the words are a cycle's passing ones (another head took the quota first) and the
    status says already that it waits for quota, in words that say how much is missing."""
    current = conditions_of(obj)
    old = _rewords(current, reason)
    if old is not None:
        passing = reason == WAITING_FOR_QUOTA and message in PASSING_WORDS
        if passing or old.get("message") == message:
            return None
    updates = pending_status(reason, message, now)["conditions"]
    return {"status": {"conditions": merge_conditions(current, updates)}}


def rewords(obj: Mapping[str, Any], reason: str) -> bool:
    """Whether ``QuotaReserved`` says False for ``reason`` already: new words for that reason
    change only its message."""
    return _rewords(conditions_of(obj), reason) is not None


def _rewords(conditions: list[Object], reason: str) -> Mapping[str, Any] | None:
    """``QuotaReserved`` when it says False for ``reason``."""
    old = find(conditions, QUOTA_RESERVED)
    if old is not None and old.get("status") == "False" and old.get("reason") == reason:
        return old
    return None


def preempt_patch(obj: Mapping[str, Any], victim: Victim, now: float) -> Object | None:
    """Evicted and Preempted on a victim (released too if bare); None when it is already
    evicted, or finished since the cycle chose it (its quota goes without an eviction)."""
    current = conditions_of(obj)
    if is_true(current, EVICTED) or is_true(current, FINISHED):
        return None
    updates = preempted_status(victim.reason, victim.message, now)["conditions"]
    return _evicted(obj, merge_conditions(current, updates), now)


def _evicted(obj: Mapping[str, Any], conditions: list[Object], now: float) -> Object:
    """An eviction's patch; a bare Workload's also releases its reservation, which would
    otherwise take a second write once the eviction came back on the watch: no job stops."""
    if not _bare(obj):
        return {"status": {"conditions": conditions}}
    return release_patch({"status": {"conditions": conditions}}, now)


def _bare(obj: Mapping[str, Any]) -> bool:
    """No job owns it: nobody but kq will clear its reservation."""
    return not (obj.get("metadata") or {}).get("ownerReferences")


def untrusted_message(why: str) -> str:
    return f"The admission was not made by kq: {why}"


def untrusted_patch(obj: Mapping[str, Any], why: str, now: float) -> Object | None:
    """Evicted for an admission kq could not have made; None when it is already evicted."""
    current = conditions_of(obj)
    if is_true(current, EVICTED):
        return None
    update = condition(EVICTED, True, UNTRUSTED_ADMISSION, untrusted_message(why), now)
    return _evicted(obj, merge_conditions(current, [update]), now)


def needs_release(obj: Mapping[str, Any]) -> bool:
    """An evicted Workload no job owns still holds quota: nobody else will clear it."""
    current = conditions_of(obj)
    return _bare(obj) and is_true(current, EVICTED) and is_true(current, QUOTA_RESERVED)


def release_patch(obj: Mapping[str, Any], now: float) -> Object:
    """What a job integration writes once its job stopped: reservation gone, requeue state."""
    current = conditions_of(obj)
    evicted = find(current, EVICTED) or {}
    reason = str(evicted.get("reason", ""))
    message = str(evicted.get("message", ""))
    updates = [condition(QUOTA_RESERVED, False, "Pending", message, now)]
    if find(current, ADMITTED) is not None:
        updates.append(
            condition(ADMITTED, False, "NoReservation", "The workload has no reservation", now)
        )
    if reason in REQUEUE_AT_ONCE:
        updates.append(condition(REQUEUED, True, reason, message, now))
    else:
        updates.append(condition(REQUEUED, False, reason, message, now))
    return {"status": {"admission": None, "conditions": merge_conditions(current, updates)}}
