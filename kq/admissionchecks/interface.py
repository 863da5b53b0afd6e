"""The contract of an admission-check controller: what a plugin implements, what kq gives it.

A controller owns every AdmissionCheck whose ``spec.controllerName`` is its
``CONTROLLER_NAME``. kq does the generic part, as Kueue's workload controller does: it lists
the checks on a Workload once quota is reserved, writes ``Active`` on the AdmissionChecks from
``activity``, evicts on ``Retry``, deactivates on ``Rejected`` and admits when every check is
``Ready``. The controller only says, per Workload, which state each of its checks is in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from kq.runtime.resources import Resource
from kq.runtime.store import Store

if TYPE_CHECKING:  # the client pulls in kubernetes_asyncio: only the processes that talk need it
    from kq.runtime.client import KubeClient

Obj = dict[str, Any]

PENDING = "Pending"
READY = "Ready"
RETRY = "Retry"
REJECTED = "Rejected"
STATES = (PENDING, READY, RETRY, REJECTED)


@dataclass(frozen=True, slots=True)
class Activity:
    """The ``Active`` condition kq writes on an AdmissionCheck this controller owns."""

    active: bool
    reason: str
    message: str

    @classmethod
    def ok(cls, message: str = "The admission check is active") -> Activity:
        return cls(True, "Active", message)


@dataclass(frozen=True, slots=True)
class CheckUpdate:
    """One check's state on one Workload (``status.admissionChecks[]``, minus kq's fields).

    ``retryCount`` and ``lastTransitionTime`` are kq's: eviction after ``Retry`` counts the
    retry, and the time moves only when the state does.
    """

    name: str
    state: str
    message: str = ""
    requeue_after_seconds: int | None = None
    """With ``Retry``: how long the Workload waits before it is queued again."""
    pod_set_updates: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    """With ``Ready``: ``{name, labels, annotations, nodeSelector, tolerations}`` per pod set,
    applied to the job when it starts."""


class CheckContext(Protocol):
    """What kq hands a controller: the API, the caches of its ``WATCHES``, events, requeues."""

    @property
    def client(self) -> KubeClient:
        """Writes to the API server (reads should come from ``store``)."""
        ...

    def store(self, resource: Resource) -> Store:
        """The informer cache of a kind in ``WATCHES`` (or of Workloads and AdmissionChecks)."""
        ...

    def enqueue(self, workload_key: str, after: float = 0.0) -> None:
        """Call ``sync`` for ``namespace/name`` again, now or in ``after`` seconds."""
        ...

    def event(self, obj: Obj, reason: str, message: str, warning: bool = False) -> None:
        """A core/v1 Event about ``obj``, posted in the background."""
        ...


@runtime_checkable
class AdmissionCheckController(Protocol):
    """Registered through ``kq_register_admission_checks``; instantiated once, no arguments.

    kq calls ``sync`` when a Workload listing one of the controller's checks changes, when an
    object in ``WATCHES`` that a Workload owns changes (its owner is synced), when a
    cluster-scoped object in ``WATCHES`` changes (every such Workload is synced), and when
    ``CheckContext.enqueue`` asks. Only the leading replica calls it.
    """

    CONTROLLER_NAME: ClassVar[str]
    WATCHES: ClassVar[tuple[Resource, ...]]

    def activity(self, check: Obj, ctx: CheckContext) -> Activity:
        """Whether an AdmissionCheck of this controller is usable (pure; read ``ctx.store``)."""
        ...

    async def sync(
        self, workload: Obj, checks: Sequence[Obj], ctx: CheckContext
    ) -> Sequence[CheckUpdate]:
        """The states of ``checks`` (AdmissionCheck objects) on ``workload``, after any I/O.

        Called also for finished, evicted or quota-less Workloads that still list a check,
        so resources made for them can be cleaned up; what it returns for those is ignored
        (kq reset the states on eviction, and they wait for the next reservation).
        """
        ...
