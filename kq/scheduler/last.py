"""Each workload's last decision, kept so ``explain`` reads what the scheduler decided rather
than a re-computation that could disagree."""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass

import structlog

from kq.scheduler.assignment import Assignment
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Decision

log = structlog.get_logger("kq.scheduler.decisions")

KEPT = 200_000
"""Bound on the workloads remembered; the oldest decision goes first."""


@dataclass(frozen=True, slots=True)
class Decided:
    decision: Decision
    assignment: Assignment | None
    """``None`` when the head did not get as far as flavor assignment."""
    at: float
    trace_id: str = ""
    """The trace of the cycle that decided (empty when spans are not recorded)."""


_Fields = tuple[Decision, Assignment | None, float, str]
"""A ``Decided``'s fields: every head's decision is recorded, few are ever read, and the
tuple costs a tenth of the frozen dataclass to build."""


class LastDecisions:
    def __init__(self) -> None:
        self._by_key: OrderedDict[str, _Fields] = OrderedDict()

    def record(self, result: CycleResult, now: float) -> None:
        by_key, assignments = self._by_key, result.assignments
        # Asked once per cycle: a debug call costs microseconds even when filtered out.
        debug = log.is_enabled_for(logging.DEBUG)
        for decision in result.decisions:
            key = decision.key
            by_key[key] = (decision, assignments.get(key), now, result.trace_id)
            by_key.move_to_end(key)
            if debug:
                log.debug(
                    "decision",
                    workload=key,
                    result=type(decision).__name__,
                    reason=getattr(decision, "reason", ""),
                    message=getattr(decision, "message", ""),
                    trace_id=result.trace_id,
                )
        while len(by_key) > KEPT:
            by_key.popitem(last=False)

    def get(self, key: str) -> Decided | None:
        fields = self._by_key.get(key)
        return None if fields is None else Decided(*fields)

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)
