"""WorkloadPriorityClass, and the keys that name where a Workload's priority came from."""

from __future__ import annotations

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
