"""Status conditions as frozen values, with the helpers the core needs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kq.api.timestamps import parse_time
from kq.frozen import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: float | None = None

    @property
    def is_true(self) -> bool:
        return self.status == "True"


def parse_conditions(raw: Iterable[Mapping[str, Any]] | None) -> tuple[Condition, ...]:
    return tuple(
        Condition(
            type=str(c.get("type", "")),
            status=str(c.get("status", "Unknown")),
            reason=str(c.get("reason", "")),
            message=str(c.get("message", "")),
            last_transition_time=parse_time(c.get("lastTransitionTime")),
        )
        for c in raw or ()
    )


def find(conditions: Sequence[Condition], type_: str) -> Condition | None:
    for condition in conditions:
        if condition.type == type_:
            return condition
    return None


def is_true(conditions: Sequence[Condition], type_: str) -> bool:
    condition = find(conditions, type_)
    return condition is not None and condition.is_true


def with_condition(
    conditions: Sequence[Condition], new: Condition, now: float
) -> tuple[Condition, ...]:
    """Replace or add ``new``; the transition time moves only when the status changes."""
    old = find(conditions, new.type)
    moved = old.last_transition_time if old is not None and old.status == new.status else now
    if new.last_transition_time != moved:  # a caller that passes ``now`` saves this copy
        # Built directly: ``dataclasses.replace`` costs several times more, once per admission.
        new = Condition(new.type, new.status, new.reason, new.message, moved)
    if old is None:
        return (*conditions, new)
    return (*[c for c in conditions if c.type != new.type], new)
