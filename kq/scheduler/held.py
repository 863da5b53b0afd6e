"""Pending words for workloads held behind a head that blocks its queue (StrictFIFO).

No cycle looks at them, so no decision explains them. Kueue v0.19's workload controller
gives a workload the scheduler has not evaluated the reason ``PendingEvaluation`` and the
message "Workload is pending evaluation in the scheduling queue"; kq gives the same and adds
the head it waits behind, which the cycle that found the head unable to fit knows.
"""

from __future__ import annotations

from collections.abc import Iterable

from kq.api.conditions import find
from kq.api.workload import QUOTA_RESERVED
from kq.queue.manager import QueueManager
from kq.queue.requeue import RequeueReason
from kq.scheduler.decisions import Decision, Pending
from kq.workload.info import WorkloadInfo

PENDING_EVALUATION = "PendingEvaluation"
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
        words.extend(_words(info, message) for info in held if not _says(info, message))
    return tuple(words)


def _says(info: WorkloadInfo, message: str) -> bool:
    current = find(info.obj.conditions, QUOTA_RESERVED)
    return current is not None and (current.status, current.reason, current.message) == (
        "False",
        PENDING_EVALUATION,
        message,
    )


def _words(info: WorkloadInfo, message: str) -> Pending:
    # GENERIC: these words come with no requeue; the workload never left its queue.
    return Pending(info.key, info.cluster_queue, PENDING_EVALUATION, message, RequeueReason.GENERIC)
