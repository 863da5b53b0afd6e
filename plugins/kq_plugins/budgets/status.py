"""A Budget's status: the ledger kept in the API (so a restart loses nothing) and the figures."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from kq.plugin import Budget, make_condition, parse_time, resource_hours, rfc3339
from kq_plugins.budgets.ledger import Account, Entry

Obj = dict[str, Any]
ACTIVE, EXHAUSTED = "Active", "Exhausted"


def load_entries(obj: Mapping[str, Any]) -> list[Entry]:
    """The ledger a Budget's status holds; entries that do not parse are dropped."""
    entries = []
    for raw in (obj.get("status") or {}).get("admissions") or ():
        start = parse_time(raw.get("start"))
        if start is None:
            continue
        entries.append(
            Entry(
                workload=str(raw.get("workload", "")),
                uid=str(raw.get("uid", "")),
                start=start,
                usage={str(k): int(v) for k, v in (raw.get("usage") or {}).items()},
                end=parse_time(raw.get("end")),
                bound_end=parse_time(raw.get("boundEnd")),
                total=_total(raw.get("total")),
            )
        )
    return entries


def _total(raw: object) -> dict[str, float] | None:
    if not isinstance(raw, dict):
        return None
    return {str(k): float(v) for k, v in raw.items()}


def _entry(entry: Entry) -> Obj:
    raw: Obj = {
        "workload": entry.workload,
        "uid": entry.uid,
        "start": rfc3339(entry.start),
        "usage": dict(entry.usage),
    }
    if entry.end is not None:
        raw["end"] = rfc3339(math.ceil(entry.end))  # late rather than early: never undercount
    if entry.bound_end is not None:
        raw["boundEnd"] = rfc3339(entry.bound_end)
    if entry.total is not None:  # rounded up: a compacted entry never counts less
        raw["total"] = {k: math.ceil(v) for k, v in entry.total.items()}
    return raw


def hours(value: float) -> str:
    """Resource-hours as a decimal string, to the millionth."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def render(
    budget: Budget, entries: list[Entry], account: Account, now: float, old: Mapping[str, Any]
) -> Obj:
    """The status to write; condition times move only when their status does."""
    consumed, reserved, remaining = {}, {}, {}
    full = []
    for resource, limit in sorted(budget.limits.items()):
        consumed[resource] = hours(resource_hours(resource, account.consumed.get(resource, 0.0)))
        reserved[resource] = hours(resource_hours(resource, account.reserved.get(resource, 0.0)))
        left = max(0.0, limit - account.used(resource))
        remaining[resource] = hours(resource_hours(resource, left))
        if left <= 0:
            full.append(resource)
    status: Obj = {
        "windowStart": rfc3339(budget.window.start(now)),
        "consumed": consumed,
        "reserved": reserved,
        "remaining": remaining,
        "admissions": [_entry(e) for e in entries],
    }
    end = budget.window.end(now)
    if end is not None:
        status["windowEnd"] = rfc3339(end)
    if full:
        exhausted = (True, "LimitReached", f"no {', '.join(full)}-hours left in the window")
    else:
        exhausted = (False, "WithinLimit", "every resource has hours left in the window")
    active = (True, "Active", "the budget is enforced")
    status["conditions"] = _conditions(old, now, {ACTIVE: active, EXHAUSTED: exhausted})
    return status


def invalid(message: str, now: float, old: Mapping[str, Any]) -> Obj:
    """The status of a Budget kq cannot enforce (its spec got past validation somehow)."""
    return {"conditions": _conditions(old, now, {ACTIVE: (False, "InvalidSpec", message)})}


def _conditions(
    old: Mapping[str, Any], now: float, wanted: Mapping[str, tuple[bool, str, str]]
) -> list[Obj]:
    current = (old.get("status") or {}).get("conditions") or []
    out = []
    for kind, (status, reason, message) in wanted.items():
        new = make_condition(kind, status, reason, message, now)
        before = next((c for c in current if c.get("type") == kind), None)
        if before is not None and before.get("status") == new["status"]:
            new["lastTransitionTime"] = before.get("lastTransitionTime")
        out.append(new)
    return out
