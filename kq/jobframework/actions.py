"""What the pure reconciler asks the I/O side to do, in order.

Job writes carry the whole new object and the JSON merge patch from the object the decision
was made on, so consecutive writes apply without resourceVersion juggling. Workload writes name
the Workload; status changes say *what* to change and leave condition bookkeeping (transition
times, ``Previously:`` messages) to the Workload helpers of the core.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kq.jobframework.interface import ReclaimablePod
from kq.jobframework.objects import Obj, merge_patch


@dataclass(frozen=True, slots=True)
class Event:
    """An event on the job, with Kueue's reason and message."""

    reason: str
    message: str
    type: str = "Normal"
    member: str = ""
    """For a ``ComposableJob``: the member the event is about (default: the job)."""
    workload: str = ""
    """The Workload (by name) the event is about instead of the job."""


@dataclass(frozen=True, slots=True)
class UpdateJob:
    job: Obj
    patch: Obj
    """RFC 7386 merge patch; apply to the main resource (not ``/status``)."""


@dataclass(frozen=True, slots=True)
class PatchJobStatus:
    patch: Obj
    """Merge patch for the ``status`` subresource, e.g. ``{"status": {"startTime": None}}``."""
    member: str = ""
    """For a ``ComposableJob``: the member to patch (default: the job)."""


@dataclass(frozen=True, slots=True)
class DeleteMember:
    """Delete one member object of a ``ComposableJob`` (a pod of a group)."""

    member: str


@dataclass(frozen=True, slots=True)
class CreateWorkload:
    workload: Obj


@dataclass(frozen=True, slots=True)
class UpdateWorkloadSpec:
    namespace: str
    name: str
    spec: Obj


@dataclass(frozen=True, slots=True)
class SetWorkloadOwners:
    """Replace the Workload's ``ownerReferences`` (a group's new members become owners)."""

    namespace: str
    name: str
    owners: Sequence[Obj]


@dataclass(frozen=True, slots=True)
class DeleteWorkload:
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class RemoveWorkloadFinalizer:
    """Drop ``kueue.x-k8s.io/resource-in-use`` so garbage collection can delete the Workload."""

    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class FinishWorkload:
    """Set ``Finished=True`` with ``reason`` and ``message``; quota is released."""

    namespace: str
    name: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ReleaseQuota:
    """An evicted job has stopped: clear the admission and set ``Requeued``.

    ``QuotaReserved`` turns False and ``Requeued`` gets status ``requeued`` with the eviction's
    reason and message (True after preemption or node failures, otherwise False until backoff).
    """

    namespace: str
    name: str
    requeued: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class SetWorkloadCondition:
    namespace: str
    name: str
    condition: Obj
    """``type``, ``status``, ``reason``, ``message``; the core sets the transition time."""


@dataclass(frozen=True, slots=True)
class SetReclaimablePods:
    namespace: str
    name: str
    pods: Sequence[ReclaimablePod]


Action = (
    Event
    | UpdateJob
    | PatchJobStatus
    | DeleteMember
    | CreateWorkload
    | UpdateWorkloadSpec
    | SetWorkloadOwners
    | DeleteWorkload
    | RemoveWorkloadFinalizer
    | FinishWorkload
    | ReleaseQuota
    | SetWorkloadCondition
    | SetReclaimablePods
)


def update_job(old: Obj, new: Obj) -> list[Action]:
    """``UpdateJob`` when something changed, else nothing."""
    patch: dict[str, Any] = merge_patch(old, new)
    return [UpdateJob(new, patch)] if patch else []
