"""The vocabulary of the workload controller's decision: steps, facts, eviction (pure)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from kq.api.workload import EVICTED
from kq.config import WaitForPodsReady
from kq.controllers.patches import merge_conditions
from kq.workload import checks
from kq.workload.status import condition

Object = dict[str, Any]

DEACTIVATION_TARGET = "DeactivationTarget"


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


@dataclass(frozen=True, slots=True)
class Facts:
    """What the decision reads besides the Workload."""

    required: Collection[str] | None = None
    """The checks its ClusterQueue asks of its admission; ``None`` while it is unknown."""
    pods_ready: WaitForPodsReady | None = None
    """The waitForPodsReady configuration, when enabled."""
    cluster_queue_stop: str = "None"
    """``stopPolicy`` of its ClusterQueue."""
    local_queue_stop: str = "None"
    """``stopPolicy`` of its LocalQueue."""


def evict(
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
