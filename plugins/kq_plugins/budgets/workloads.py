"""What the budgets need to know of a Workload object, read from the informer's dict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kq.plugin import parse_time, to_amount
from kq_plugins.budgets.ledger import Entry

ACCUMULATED = "accumulatedPastExexcutionTimeSeconds"  # sic: Kueue's field name


@dataclass(frozen=True, slots=True)
class Facts:
    key: str
    uid: str
    namespace: str
    queue: str
    cluster_queue: str | None
    usage: dict[str, int]
    admitted_since: float | None
    """``Admitted=True`` since then: it consumes."""
    holding: bool
    """Holds quota but is not admitted yet (admission checks): it will consume."""
    released_at: float | None
    """When it stopped holding quota, if the object says (``Admitted=False`` or finished)."""
    limit_left: float | None
    """``maximumExecutionTimeSeconds`` minus what past admissions used; ``None``: no limit."""
    finished_span: tuple[float, float] | None = None
    """Admitted, then finished: from when to when (an admission shorter than a tick)."""


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return dict(condition)
    return {}


def _usage(admission: Mapping[str, Any] | None) -> dict[str, int]:
    total: dict[str, int] = {}
    for assignment in (admission or {}).get("podSetAssignments") or ():
        for resource, value in (assignment.get("resourceUsage") or {}).items():
            total[resource] = total.get(resource, 0) + to_amount(resource, value)
    return total


def limit_left(obj: Mapping[str, Any]) -> float | None:
    limit = (obj.get("spec") or {}).get("maximumExecutionTimeSeconds")
    if limit is None:
        return None
    return max(0.0, float(limit) - float((obj.get("status") or {}).get(ACCUMULATED) or 0))


def facts(obj: Mapping[str, Any]) -> Facts:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    admission = status.get("admission")
    admitted, reserved = _condition(obj, "Admitted"), _condition(obj, "QuotaReserved")
    finished = _condition(obj, "Finished")
    holding_quota = admission is not None and reserved.get("status") == "True"
    is_admitted = holding_quota and admitted.get("status") == "True"
    span = None
    if finished.get("status") == "True":
        since = parse_time(admitted.get("lastTransitionTime"))
        until = parse_time(finished.get("lastTransitionTime"))
        if is_admitted and since is not None and until is not None:
            span = (since, max(since, until))
        is_admitted = holding_quota = False
    released = parse_time(finished.get("lastTransitionTime")) if finished else None
    if released is None and admitted.get("status") == "False":
        released = parse_time(admitted.get("lastTransitionTime"))
    return Facts(
        key=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        uid=str(meta.get("uid", "")),
        namespace=str(meta.get("namespace", "")),
        queue=str((obj.get("spec") or {}).get("queueName", "")),
        cluster_queue=(admission or {}).get("clusterQueue"),
        usage=_usage(admission),
        admitted_since=parse_time(admitted.get("lastTransitionTime")) if is_admitted else None,
        holding=holding_quota and not is_admitted,
        released_at=released,
        limit_left=limit_left(obj),
        finished_span=span,
    )


def ended_at(entry: Entry, workload: Facts | None, now: float) -> float:
    """When the Workload says it stopped; else now (kq was down, or it was deleted), but never
    past its maximum execution time, when kq would have stopped it."""
    at = workload.released_at if workload is not None else None
    if at is not None and at <= now:
        return at
    return now if entry.bound_end is None else min(now, entry.bound_end)
