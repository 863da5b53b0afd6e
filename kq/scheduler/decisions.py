"""What a cycle decides per workload; the runtime turns these into status patches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kq.api.workload import Admission
from kq.queue.requeue import RequeueReason


@dataclass(init=False, slots=True)
class Admit:
    key: Final[str]
    admission: Final[Admission]
    borrowing: Final[bool]
    admission_checks: Final[tuple[str, ...]]
    """Checks still to pass; with none, ``Admitted=True`` goes with ``QuotaReserved=True``."""

    def __init__(
        self,
        key: str,
        admission: Admission,
        borrowing: bool,
        admission_checks: tuple[str, ...] = (),
    ) -> None:
        self.key = key
        self.admission = admission
        self.borrowing = borrowing
        self.admission_checks = admission_checks


@dataclass(init=False, slots=True)
class Pending:
    """Stays pending: ``QuotaReserved=False`` with this reason and message."""

    key: Final[str]
    cluster_queue: Final[str]
    reason: Final[str]
    message: Final[str]
    requeue: Final[RequeueReason]

    def __init__(
        self, key: str, cluster_queue: str, reason: str, message: str, requeue: RequeueReason
    ) -> None:
        self.key = key
        self.cluster_queue = cluster_queue
        self.reason = reason
        self.message = message
        self.requeue = requeue


@dataclass(init=False, slots=True)
class Victim:
    key: Final[str]
    reason: Final[str]
    """``Preempted`` condition reason: InClusterQueue, InCohortReclamation, ..."""
    message: Final[str]

    def __init__(self, key: str, reason: str, message: str) -> None:
        self.key = key
        self.reason = reason
        self.message = message


@dataclass(init=False, slots=True)
class Preempt:
    """The preemptor waits (pending message given) while ``victims`` are evicted."""

    key: Final[str]
    cluster_queue: Final[str]
    victims: Final[tuple[Victim, ...]]
    message: Final[str]
    reason: Final[str]

    def __init__(
        self,
        key: str,
        cluster_queue: str,
        victims: tuple[Victim, ...],
        message: str,
        reason: str = "WaitingForPreemptedWorkloads",
    ) -> None:
        self.key = key
        self.cluster_queue = cluster_queue
        self.victims = victims
        self.message = message
        self.reason = reason


Decision = Admit | Pending | Preempt
