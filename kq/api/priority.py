"""WorkloadPriorityClass and the priority a new Workload gets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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


@dataclass(frozen=True, slots=True)
class PriorityClassInfo:
    """A ``scheduling.k8s.io`` PriorityClass, as far as priority resolution needs it."""

    name: str
    value: int
    global_default: bool = False


@dataclass(frozen=True, slots=True)
class ResolvedPriority:
    value: int
    class_name: str = ""
    source: str = ""


def parse_workload_priority_class(obj: Mapping[str, Any]) -> WorkloadPriorityClass | Invalid:
    name = str((obj.get("metadata") or {}).get("name", ""))
    value = obj.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        return Invalid("WorkloadPriorityClass", name, "InvalidSpec", "value: Required value")
    return WorkloadPriorityClass(name, value)


def resolve_priority(
    job_labels: Mapping[str, str],
    pod_priority_class_names: Sequence[str | None],
    workload_classes: Mapping[str, WorkloadPriorityClass],
    pod_classes: Mapping[str, PriorityClassInfo],
) -> ResolvedPriority | Invalid:
    """WorkloadPriorityClass label, then the first pod template class, then the global default.

    A missing WorkloadPriorityClass is an error (Kueue creates no Workload); a missing pod
    class falls through to the default, as the pod would be rejected anyway.
    """
    wpc_name = job_labels.get(PRIORITY_CLASS_LABEL)
    if wpc_name:
        wpc = workload_classes.get(wpc_name)
        if wpc is None:
            return Invalid(
                "WorkloadPriorityClass",
                wpc_name,
                "WorkloadPriorityClassNotFound",
                f'workloadPriorityClass "{wpc_name}" not found',
            )
        return ResolvedPriority(wpc.value, wpc.name, WORKLOAD_PRIORITY_CLASS_SOURCE)
    for name in pod_priority_class_names:
        if name and name in pod_classes:
            return ResolvedPriority(pod_classes[name].value, name, POD_PRIORITY_CLASS_SOURCE)
    defaults = sorted((c for c in pod_classes.values() if c.global_default), key=lambda c: c.value)
    if defaults:
        return ResolvedPriority(defaults[0].value, defaults[0].name, POD_PRIORITY_CLASS_SOURCE)
    return ResolvedPriority(0)
