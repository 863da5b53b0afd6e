"""The priority a new Workload gets, resolved as Kueue's job framework does.

1. The job's label ``kueue.x-k8s.io/priority-class`` names a WorkloadPriorityClass.
2. Else the integration's own class (``JobWithPriorityClass``), else the first PodSet template
   with a ``priorityClassName``: a ``scheduling.k8s.io`` PriorityClass.
3. Else the cluster's ``globalDefault`` PriorityClass (the lowest value if several), else 0.

A named class that does not exist is an error: no Workload is created until it does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kq.api.priority import (
    POD_PRIORITY_CLASS_SOURCE,
    PRIORITY_CLASS_LABEL,
    WORKLOAD_PRIORITY_CLASS_SOURCE,
)
from kq.jobframework.constants import REASON_PRIORITY_CLASS_NOT_FOUND, REASON_WPC_NOT_FOUND
from kq.jobframework.interface import GenericJob, Job, JobWithPriorityClass
from kq.jobframework.objects import labels
from kq.jobframework.podset import PodSet


@dataclass(frozen=True, slots=True)
class Priorities:
    """The cluster's priority classes: WorkloadPriorityClass and PriorityClass values by name."""

    workload_classes: Mapping[str, int]
    pod_classes: Mapping[str, int]
    global_defaults: Sequence[str] = ()
    """Names of the PriorityClasses with ``globalDefault: true``."""


@dataclass(frozen=True, slots=True)
class Priority:
    value: int
    class_name: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class PriorityNotFound:
    """The Warning event to emit instead of creating a Workload."""

    reason: str
    message: str


def resolve_priority(
    integration: GenericJob, job: Job, pod_sets: Sequence[PodSet], priorities: Priorities
) -> Priority | PriorityNotFound:
    wpc = labels(job).get(PRIORITY_CLASS_LABEL, "")
    if wpc:
        if wpc not in priorities.workload_classes:
            return PriorityNotFound(
                REASON_WPC_NOT_FOUND, f'WorkloadPriorityClass "{wpc}" not found'
            )
        return Priority(priorities.workload_classes[wpc], wpc, WORKLOAD_PRIORITY_CLASS_SOURCE)
    if isinstance(integration, JobWithPriorityClass):
        name = integration.priority_class(job)
    else:
        name = next((n for ps in pod_sets if (n := _class_of(ps))), "")
    if name:
        if name not in priorities.pod_classes:
            return PriorityNotFound(
                REASON_PRIORITY_CLASS_NOT_FOUND, f'PriorityClass "{name}" not found'
            )
        return Priority(priorities.pod_classes[name], name, POD_PRIORITY_CLASS_SOURCE)
    defaults = sorted(
        (priorities.pod_classes[n], n)
        for n in priorities.global_defaults
        if n in priorities.pod_classes
    )
    if defaults:
        value, default = defaults[0]
        return Priority(value, default, POD_PRIORITY_CLASS_SOURCE)
    return Priority(0)


def _class_of(pod_set: PodSet) -> str:
    return str((pod_set.template.get("spec") or {}).get("priorityClassName") or "")
