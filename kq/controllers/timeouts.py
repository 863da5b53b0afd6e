"""Time limits on an admitted Workload: waitForPodsReady and maximumExecutionTimeSeconds (pure).

Each either says how long until it must be looked at again, or what to write now, as Kueue's
``reconcileNotReadyTimeout`` and ``reconcileMaxExecutionTime``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kq.api.timestamps import parse_time
from kq.api.workload import ADMITTED
from kq.config import WaitForPodsReady
from kq.controllers.patches import find, merge_conditions
from kq.controllers.steps import DEACTIVATION_TARGET, Event, Facts, Step, Wait, Write, evict
from kq.workload import checks
from kq.workload.status import condition, rfc3339

Object = dict[str, Any]

PODS_READY = "PodsReady"
PODS_READY_TIMEOUT = "PodsReadyTimeout"
REQUEUING_LIMIT = "RequeuingLimitExceeded"
MAX_EXECUTION = "MaximumExecutionTimeExceeded"
# v1beta1's spelling (v1beta2 fixed the typo); kq serves v1beta1.
ACCUMULATED = "accumulatedPastExexcutionTimeSeconds"


def admitted(obj: Mapping[str, Any], current: list[Object], facts: Facts, now: float) -> Step:
    """The first limit that is up, else a wait until the nearest one."""
    found = [
        _pods_ready(obj, current, facts.pods_ready, now) if facts.pods_ready else None,
        _execution_time(obj, current, now),
    ]
    writes = [s for s in found if isinstance(s, Write)]
    if writes:
        return writes[0]
    waits = [s.seconds for s in found if isinstance(s, Wait)]
    return Wait(min(waits)) if waits else None


def _pods_ready(
    obj: Mapping[str, Any], current: list[Object], config: WaitForPodsReady, now: float
) -> Step:
    """Pods not ready in time: evicted with a requeue back-off, or deactivated past
    ``backoffLimitCount`` requeues."""
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
    count = int((obj["status"].get("requeueState") or {}).get("count") or 0) + 1
    limit = strategy.backoff_limit_count
    if limit is not None and count > limit:
        message = "exceeding the maximum number of re-queuing retries"
        target = condition(DEACTIVATION_TARGET, True, REQUEUING_LIMIT, message, now)
        return Write({"status": {"conditions": merge_conditions(current, [target])}})
    meta = obj.get("metadata") or {}
    message = f"Exceeded the PodsReady timeout {meta.get('namespace')}/{meta.get('name')}"
    step = evict(current, checks.states_of(obj), PODS_READY_TIMEOUT, message, now)
    delay = checks.backoff(count, strategy.backoff_base_seconds, strategy.backoff_max_seconds)
    step.patch["status"]["requeueState"] = {"count": count, "requeueAt": rfc3339(now + delay)}
    return step


def _execution_time(obj: Mapping[str, Any], current: list[Object], now: float) -> Step:
    """Past ``spec.maximumExecutionTimeSeconds`` of admitted time: deactivated."""
    limit = (obj.get("spec") or {}).get("maximumExecutionTimeSeconds")
    if limit is None or find(current, DEACTIVATION_TARGET) is not None:
        return None
    past = int(obj["status"].get(ACCUMULATED) or 0)
    since = parse_time((find(current, ADMITTED) or {}).get("lastTransitionTime")) or now
    remaining = int(limit) - past - (now - since)
    if remaining > 0:
        return Wait(remaining)
    target = condition(
        DEACTIVATION_TARGET, True, MAX_EXECUTION, "exceeding the maximum execution time", now
    )
    patch: Object = {"conditions": merge_conditions(current, [target])}
    if ACCUMULATED in obj["status"]:
        patch[ACCUMULATED] = None
    event = Event(MAX_EXECUTION, f"The maximum execution time ({int(limit)}s) exceeded", True)
    return Write({"status": patch}, events=(event,))
