"""Pending words for workloads no cycle looks at: held behind a head that blocks its queue
(StrictFIFO), or queued in a shape parked with its head (BestEffortFIFO).

No decision explains them. Kueue v0.19's workload controller gives a workload the scheduler
has not evaluated the reason ``PendingEvaluation`` and the message "Workload is pending
evaluation in the scheduling queue"; kq gives the same and adds the head it waits behind,
which the cycle that found the head unable to fit knows. A workload of a parked shape would
fail as its head did (Kueue tries it and says so; kq parks equivalent shapes together), so
it is told the head's words once the shape has stayed parked ``PARKED_WORDS_AFTER_S`` (5 s):
in a busy cohort the shape is tried again sooner, and words for every workload behind it
would be a status write per workload that Kueue does not make (Kueue retries the failing head
and leaves the others without words until it tries them).
"""

from __future__ import annotations

from collections.abc import Iterable

from kq.api.conditions import find
from kq.api.workload import PENDING_EVALUATION, QUOTA_RESERVED
from kq.queue.manager import QueueManager
from kq.queue.requeue import RequeueReason
from kq.scheduler.decisions import Decision, Pending
from kq.workload.info import WorkloadInfo

PENDING_EVALUATION_MESSAGE = "Workload is pending evaluation in the scheduling queue"


def held_message(head: str, cluster_queue: str, strategy: str) -> str:
    """``head`` is the blocking workload's ``namespace/name``."""
    return (
        f"{PENDING_EVALUATION_MESSAGE}: it waits behind {head}, the head of {strategy} "
        f"ClusterQueue {cluster_queue}, which does not fit"
    )


def held_words(queues: QueueManager, decisions: Iterable[Decision]) -> tuple[Pending, ...]:
    """Words for every workload a cycle's pending heads hold back, read after the cycle put
    its heads back; a workload whose status says them already is skipped, so a queue blocked
    for long costs no write per cycle and workload."""
    words: list[Pending] = []
    for decision in decisions:
        if not isinstance(decision, Pending):
            continue
        cq = decision.cluster_queue
        held = queues.held_behind(cq, decision.key, decision.requeue)
        if not held:
            continue
        message = held_message(decision.key, cq, queues.queues[cq].strategy.NAME)
        words.extend(
            _words(info, PENDING_EVALUATION, message)
            for info in held
            if not _says(info, PENDING_EVALUATION, message)
        )
    return tuple(words)


def parked_words(queues: QueueManager, now: float) -> tuple[Pending, ...]:
    """Words for the workloads that joined a parked shape since the last cycle (arrivals, and
    those queued untried when it parked): its head's, each handed out once by the queues, and
    skipped when the status says them already (our own write of them coming back)."""
    return tuple(
        _words(info, reason, message)
        for info, (reason, message) in queues.take_parked_words(now)
        if not _says(info, reason, message)
    )


def _says(info: WorkloadInfo, reason: str, message: str) -> bool:
    current = find(info.obj.conditions, QUOTA_RESERVED)
    return current is not None and (current.status, current.reason, current.message) == (
        "False",
        reason,
        message,
    )


def _words(info: WorkloadInfo, reason: str, message: str) -> Pending:
    # GENERIC: these words come with no requeue; the workload never left its queue.
    return Pending(info.key, info.cluster_queue, reason, message, RequeueReason.GENERIC)
