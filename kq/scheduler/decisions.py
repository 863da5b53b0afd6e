"""What a cycle decides per workload; the runtime turns these into status patches."""

from __future__ import annotations

from dataclasses import dataclass

from kq.api.workload import Admission
from kq.frozen import quick_init
from kq.queue.requeue import RequeueReason


@quick_init
@dataclass(frozen=True, slots=True)
class Admit:
    key: str
    admission: Admission
    borrowing: bool
    admission_checks: tuple[str, ...] = ()
    """Checks still to pass; with none, ``Admitted=True`` goes with ``QuotaReserved=True``."""


@quick_init
@dataclass(frozen=True, slots=True)
class Pending:
    """Stays pending: ``QuotaReserved=False`` with this reason and message."""

    key: str
    cluster_queue: str
    reason: str
    message: str
    requeue: RequeueReason


@quick_init
@dataclass(frozen=True, slots=True)
class Victim:
    key: str
    reason: str
    """``Preempted`` condition reason: InClusterQueue, InCohortReclamation, ..."""
    message: str


@quick_init
@dataclass(frozen=True, slots=True)
class Preempt:
    """The preemptor waits (pending message given) while ``victims`` are evicted."""

    key: str
    cluster_queue: str
    victims: tuple[Victim, ...]
    message: str
    reason: str = "WaitingForPreemptedWorkloads"


Decision = Admit | Pending | Preempt
