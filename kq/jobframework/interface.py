"""The contract between the job framework and an integration (one class per job kind).

An integration is stateless: every method takes the job as the API returns it (a plain dict)
and returns values or a NEW dict; none does I/O. The generic reconciler
(``kq.jobframework.reconciler``) owns the hard parts: Workload creation and matching,
start/stop, finishing. Optional behaviour is a separate ``runtime_checkable`` Protocol that an
integration implements or not, as in Kueue's ``jobframework/interface.go``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from kq.jobframework.objects import Obj
from kq.jobframework.podset import PodSet, PodSetInfo

Job = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> str:
        """``Kind.group``, as Kueue's ``controller.groupKindConcurrency`` keys kinds."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


@dataclass(frozen=True, slots=True)
class Finished:
    """A finished job: the Workload gets ``Finished=True`` with reason Succeeded or Failed."""

    success: bool
    message: str


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation error, printed the way Kubernetes prints ``field.Error``."""

    path: str
    kind: str
    """``Invalid``, ``Required``, ``Forbidden`` or ``Too many``."""
    detail: str
    value: Any = None

    def __str__(self) -> str:
        if self.kind == "Invalid":
            return f"{self.path}: Invalid value: {_show(self.value)}: {self.detail}"
        if self.kind == "Too many":
            return f"{self.path}: Too many: {self.value}: {self.detail}"
        label = "Required value" if self.kind == "Required" else self.kind
        return f"{self.path}: {label}: {self.detail}"


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class ReclaimablePod:
    name: str
    count: int


@dataclass(frozen=True, slots=True)
class JobStep:
    """One write of a custom stop: a new job object, or a patch of its status subresource."""

    job: Obj | None = None
    status_patch: Obj | None = None
    member: str = ""
    """For a ``ComposableJob``: the member object (a pod) the status patch or delete is about."""
    delete: bool = False
    """Delete ``member``."""
    event: tuple[str, str] | None = None
    """``(reason, message)`` of a Normal event about ``member`` once the step is done."""


@runtime_checkable
class GenericJob(Protocol):
    """What every integration provides; checked when the integration registers."""

    NAME: ClassVar[str]
    """Framework name, as in Kueue's ``integrations.frameworks`` (``batch/job``, ...)."""
    GVK: ClassVar[GroupVersionKind]

    def is_suspended(self, job: Job) -> bool: ...

    def suspend(self, job: Job) -> dict[str, Any]:
        """A copy of ``job`` with its suspend field set."""
        ...

    def pod_sets(self, job: Job) -> list[PodSet]:
        """The PodSets of the Workload, in a fixed order that infos follow."""
        ...

    def run_with_pod_set_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        """A copy unsuspended, with every info merged into its template; ``PodSetInfoError``."""
        ...

    def restore_pod_sets_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        """A copy whose templates carry exactly ``infos`` again (the Workload's originals)."""
        ...

    def finished(self, job: Job) -> Finished | None: ...

    def is_active(self, job: Job) -> bool:
        """Whether pods may still run; a new Workload is created only when this is false."""
        ...

    def pods_ready(self, job: Job) -> bool: ...


@runtime_checkable
class JobWithCustomStop(Protocol):
    def stop(self, job: Job, infos: Sequence[PodSetInfo]) -> list[JobStep]:
        """The writes, in order, that suspend the job and restore ``infos``; empty if stopped."""
        ...


@runtime_checkable
class JobWithPriorityClass(Protocol):
    def priority_class(self, job: Job) -> str:
        """The pod PriorityClass name to use instead of the first PodSet's one."""
        ...


@runtime_checkable
class JobWithReclaimablePods(Protocol):
    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]: ...


@runtime_checkable
class JobWithCustomValidation(Protocol):
    def validate_on_create(self, job: Job) -> list[FieldError]: ...

    def validate_on_update(self, old: Job, new: Job) -> list[FieldError]: ...


@runtime_checkable
class JobWithSkip(Protocol):
    def skip(self, job: Job) -> bool:
        """Whether kq leaves this job alone entirely (e.g. a RayJob on an existing cluster)."""
        ...


@runtime_checkable
class ComposableJob(Protocol):
    """A job made of several API objects, as Kueue's pod groups (``ComposableJob`` upstream).

    The framework reads every member from the kind's informer, hands ``compose`` the members
    of one group (or one object alone) and treats the result as the job; writes to it go to
    the members that changed. Workloads of a group are matched by ``owns``, not by a controller
    owner reference.
    """

    def group_name(self, obj: Job) -> str:
        """The group ``obj`` belongs to; ``""`` when it is a job by itself."""
        ...

    def compose(self, objs: Sequence[Job]) -> dict[str, Any]:
        """One job from the members of a group (or one object alone); ``objs`` is not empty."""
        ...

    def members(self, job: Job) -> list[Job]:
        """The objects ``job`` was composed of."""
        ...

    def owns(self, job: Job, workload: Obj) -> bool:
        """Whether ``workload`` was made for ``job``."""
        ...

    def matches(self, job: Job, workload: Obj) -> bool | None:
        """Whether an owned Workload still describes ``job``; ``None``: the generic rules."""
        ...

    def compose_workload(self, job: Job, workload: Obj) -> dict[str, Any]:
        """The Workload built for ``job`` (name, owners, annotations) from the generic one."""
        ...

    def compose_error(self, job: Job) -> str | None:
        """Why no Workload can be built for ``job`` yet (a Warning event), or ``None``."""
        ...

    def stop_members(self, job: Job, reason: str, message: str) -> list[JobStep]:
        """The writes that stop every member still running; ``reason`` as upstream's."""
        ...

    def finalize(self, job: Job) -> dict[str, Any]:
        """``job`` with the integration's finalizers removed from every member."""
        ...

    def upkeep(self, job: Job, workload: Obj | None) -> list[JobStep]:
        """Writes that keep the members in line with their Workload, or with what it will be
        (excess members deleted, replaced ones released); a ``JobStep.job`` is the whole job
        as it should be from then on."""
        ...

    def workload_conditions(self, job: Job, workload: Obj) -> list[dict[str, Any]]:
        """Conditions the Workload should carry (``type``, ``status``, ``reason``,
        ``message``); only those that differ from the Workload's are written."""
        ...
