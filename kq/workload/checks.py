"""A Workload's ``status.admissionChecks`` as Kueue keeps it (pure; dicts in the API's shape)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from kq.api.timestamps import parse_time
from kq.workload.status import rfc3339

State = dict[str, Any]

PENDING = "Pending"
READY = "Ready"
RETRY = "Retry"
REJECTED = "Rejected"

# Fields a check controller sets; retryCount and lastTransitionTime are kq's.
_CONTROLLER_FIELDS = ("message", "requeueAfterSeconds", "podSetUpdates")


def states_of(obj: Mapping[str, Any]) -> list[State]:
    return [dict(s) for s in (obj.get("status") or {}).get("admissionChecks") or ()]


def pending(name: str, now: float) -> State:
    return {"name": name, "state": PENDING, "message": "", "lastTransitionTime": rfc3339(now)}


def synced(current: Sequence[State], required: Collection[str], now: float) -> list[State] | None:
    """The states with every required check present (new ones ``Pending``) and no other,
    sorted by name; ``None`` when nothing changes."""
    names = {s.get("name") for s in current}
    if names == set(required) and len(current) == len(required):
        return None
    kept = [s for s in current if s.get("name") in required]
    kept += [pending(name, now) for name in required if name not in names]
    return sorted(kept, key=lambda s: str(s.get("name")))


def with_update(current: Sequence[State], update: Mapping[str, Any], now: float) -> list[State]:
    """``update`` (name, state and the controller's fields) upserted; the transition time
    moves only when the state does, as Kueue's ``SetAdmissionCheckState``."""
    out: list[State] = []
    for old in current:
        if old.get("name") != update["name"]:
            out.append(old)
            continue
        new = {k: v for k, v in old.items() if k not in _CONTROLLER_FIELDS}
        new.update({k: v for k, v in update.items() if v is not None})
        if old.get("state") != update["state"] or not old.get("lastTransitionTime"):
            new["lastTransitionTime"] = rfc3339(now)
        out.append(new)
    return out


def reset_on_eviction(current: Sequence[State], now: float) -> list[State]:
    """Every check back to ``Pending``; a ``Retry`` counts one more retry and keeps its delay."""
    out = []
    for old in current:
        if old.get("state") == PENDING:
            out.append(dict(old))
            continue
        new: State = {
            "name": old.get("name"),
            "state": PENDING,
            "message": f"Reset to Pending after eviction. Previously: {old.get('state')}",
            "lastTransitionTime": rfc3339(now),
        }
        if old.get("requeueAfterSeconds") is not None:
            new["requeueAfterSeconds"] = old["requeueAfterSeconds"]
        if old.get("state") == RETRY:
            new["retryCount"] = int(old.get("retryCount") or 0) + 1
        elif old.get("retryCount") is not None:
            new["retryCount"] = old["retryCount"]
        out.append(new)
    return out


def in_state(current: Iterable[State], state: str) -> list[State]:
    return [s for s in current if s.get("state") == state]


def all_ready(current: Iterable[State]) -> bool:
    return all(s.get("state") == READY for s in current)


def checks_message(checks: Sequence[State], state: str) -> str:
    """``AdmissionCheck(s) in <state> state: "a" (why); "b"``, sorted by name, as Kueue."""
    parts = []
    for check in sorted(checks, key=lambda s: str(s.get("name"))):
        message = check.get("message") or ""
        parts.append(f'"{check.get("name")}" ({message})' if message else f'"{check.get("name")}"')
    noun = "AdmissionChecks" if len(checks) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: {'; '.join(parts)}"


def retry_time(current: Iterable[State]) -> float | None:
    """The latest moment a ``Retry`` check asks the Workload to wait until, if any."""
    latest = None
    for check in in_state(current, RETRY):
        delay = check.get("requeueAfterSeconds")
        since = parse_time(check.get("lastTransitionTime"))
        if delay is None or since is None:
            continue
        latest = max(latest or 0.0, since + float(delay))
    return latest


def backoff(attempt: int, base: float, cap: float) -> float:
    """Kueue's requeue back-off: ``base·2^(attempt-1)`` seconds, at most ``cap``, whole seconds
    (its jitter of 0.01 % is below a second for any sane base)."""
    return float(int(min(base * 2 ** (attempt - 1), cap)))
