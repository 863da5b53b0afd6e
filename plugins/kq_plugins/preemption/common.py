"""What both of Kueue's preemption algorithms share: who may preempt whom, and in which order
candidates are tried."""

from __future__ import annotations

from kq.plugin import FlavorResource, WorkloadInfo
from kq_plugins.admission_fair_sharing import LEDGER

_NOW = float("inf")  # no QuotaReserved time counts as "now", i.e. the most recent


def satisfies(policy: str, preemptor: WorkloadInfo, candidate: WorkloadInfo) -> bool:
    if policy == "Any":
        return True
    if policy == "LowerPriority":
        return candidate.priority < preemptor.priority
    if policy == "LowerOrNewerEqualPriority":
        return candidate.priority < preemptor.priority or (
            candidate.priority == preemptor.priority and preemptor.queue_time < candidate.queue_time
        )
    return False


def candidate_order(
    info: WorkloadInfo, same_queue: bool
) -> tuple[bool, bool, float, int, float, str]:
    """Evicted first, other queues first, within the preemptor's queue the LocalQueue that used
    more first (admission fair sharing), lower priority, newest reservation, UID."""
    evicted, reserved_at = info.reservation()
    return (
        not evicted,
        same_queue,
        -LEDGER.preemption_usage(info) if same_queue else 0.0,
        info.priority,
        -(reserved_at if reserved_at is not None else _NOW),
        info.obj.uid or info.key,
    )


def uses(info: WorkloadInfo, needed: set[FlavorResource]) -> bool:
    return not needed.isdisjoint(info.usage)  # in C: asked of every workload in the cohort
