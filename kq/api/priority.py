"""WorkloadPriorityClass, and the keys that name where a Workload's priority came from."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kq.api.invalid import Invalid

PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
WORKLOAD_PRIORITY_CLASS_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE = "scheduling.k8s.io/priorityclass"


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClass:
    name: str
    value: int


def parse_workload_priority_class(obj: Mapping[str, Any]) -> WorkloadPriorityClass | Invalid:
    name = str((obj.get("metadata") or {}).get("name", ""))
    value = obj.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        return Invalid("WorkloadPriorityClass", name, "InvalidSpec", "value: Required value")
    return WorkloadPriorityClass(name, value)


PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"
"""Kueue v0.19 (gate ``PriorityBoost``): a signed int32 added to ``spec.priority`` wherever the
Workload is ordered or weighed for preemption."""
LOWERED_BY_BUDGET_ANNOTATION = "kq.dev/lowered-by-budget"
"""Set, with the boost, by kq's ``budgets`` plugin on a Workload it lets in at a lower
priority (``whenExhausted: LowerPriority``): kq honours such a boost whatever the gate says,
since the administrator asked for it in the Budget, not in the configuration."""
_INT32 = (-(2**31), 2**31 - 1)
_SIGNED = re.compile(r"^[+-]?[0-9]+$")  # as Go's ParseInt: no spaces, underscores, other digits


def boost_error(value: str) -> str | None:
    """Why ``value`` is not a priority boost (Kueue's webhook refuses it), or ``None``."""
    if value == "":
        return 'must be a valid signed integer; use "0" explicitly, empty string is not allowed'
    if _SIGNED.match(value) is None or not _INT32[0] <= int(value) <= _INT32[1]:
        return "must be a valid signed integer"
    return None


def priority_boost(annotations: Mapping[str, Any], gate: bool) -> int:
    """The boost a Workload's annotations give it: Kueue's only with the gate on, a budget's
    always; 0 when absent or unparsable (the webhook refuses those when the gate is on)."""
    value = annotations.get(PRIORITY_BOOST_ANNOTATION)
    if value is None or not (gate or LOWERED_BY_BUDGET_ANNOTATION in annotations):
        return 0
    text = str(value)
    return 0 if boost_error(text) is not None else int(text, 10)
