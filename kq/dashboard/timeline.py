"""The workloads' story in time: created, admitted, preempted, finished.

A Workload's conditions keep only their last transition, so the history comes from the Events
kq records on Workloads (``QuotaReserved``, ``Admitted``, ``Preempted``); the conditions fill
in what the Events miss (Events expire after an hour, and a server may drop them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kq.api.timestamps import parse_time

Object = Mapping[str, Any]
ADMITTED, PREEMPTED, FINISHED, CREATED = "admitted", "preempted", "finished", "created"
_EVENT_MARKS = {"Admitted": ADMITTED, "Preempted": PREEMPTED}
LANES_SHOWN = 30
"""The most recently active workloads drawn; older ones only count in the tables."""


@dataclass(frozen=True)
class Mark:
    at: float
    kind: str
    message: str = ""


@dataclass
class Lane:
    """One workload's marks, oldest first."""

    key: str
    marks: list[Mark] = field(default_factory=list)

    @property
    def last(self) -> float:
        return self.marks[-1].at if self.marks else 0.0


def lanes(workloads: Sequence[Object], events: Sequence[Object]) -> list[Lane]:
    """The lanes of the ``LANES_SHOWN`` workloads with the latest marks, oldest first."""
    by_key: dict[str, Lane] = {}
    for raw in workloads:
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        by_key[key] = Lane(key, _condition_marks(raw))
    for event in events:
        _add_event(by_key, event)
    for lane in by_key.values():
        lane.marks = _deduplicated(lane.marks)
    chosen = sorted(by_key.values(), key=lambda lane: lane.last)[-LANES_SHOWN:]
    return [lane for lane in chosen if lane.marks]


def _time(value: object) -> float | None:
    try:
        return parse_time(value)
    except ValueError:
        return None


def _condition_marks(raw: Object) -> list[Mark]:
    created = _time((raw.get("metadata") or {}).get("creationTimestamp"))
    marks = [] if created is None else [Mark(created, CREATED)]
    for condition in (raw.get("status") or {}).get("conditions") or ():
        at = _time(condition.get("lastTransitionTime"))
        if at is None or condition.get("status") != "True":
            continue
        kind = {"Admitted": ADMITTED, "Finished": FINISHED}.get(str(condition.get("type")))
        if condition.get("type") == "Evicted" and condition.get("reason") == "Preempted":
            kind = PREEMPTED
        if kind is not None:
            marks.append(Mark(at, kind, str(condition.get("message") or "")))
    return marks


def _add_event(by_key: dict[str, Lane], event: Object) -> None:
    involved = event.get("involvedObject") or {}
    kind = _EVENT_MARKS.get(str(event.get("reason")))
    if involved.get("kind") != "Workload" or kind is None:
        return
    lane = by_key.get(f"{involved.get('namespace')}/{involved.get('name')}")
    if lane is None:
        return  # a deleted workload's events outlive it
    message = str(event.get("message") or "")
    # An event repeated with the same message is one object: its first and last times.
    for stamp in ("firstTimestamp", "lastTimestamp", "eventTime"):
        at = _time(event.get(stamp))
        if at is not None:
            lane.marks.append(Mark(at, kind, message))


def _deduplicated(marks: list[Mark]) -> list[Mark]:
    """Oldest first; the same kind within a second is one mark (an Event and the condition
    it goes with are written moments apart, and Events have whole seconds)."""
    kept: list[Mark] = []
    for mark in sorted(marks, key=lambda m: (m.at, m.kind)):
        twin = next((m for m in kept if m.kind == mark.kind and abs(m.at - mark.at) < 1.5), None)
        if twin is None:
            kept.append(mark)
    kept.sort(key=lambda m: m.at)
    return kept
