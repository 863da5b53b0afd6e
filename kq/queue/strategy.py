"""The queueing-strategy contract: what to do with a head that was not admitted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from kq.queue.requeue import RequeueReason
from kq.workload.info import WorkloadInfo

OrderKey = Callable[[WorkloadInfo], tuple[Any, ...]]


class QueueingStrategy(Protocol):
    """Named by ``spec.queueingStrategy``; decides whether a failed head blocks its queue.

    A strategy may also define ``order_key(self, info: WorkloadInfo) -> tuple`` to own the
    order of its queue (smallest key first); without it the order is Kueue's.
    """

    NAME: ClassVar[str]
    STICKY_PREEMPTOR: ClassVar[bool]
    """Whether a head that issued preemptions stays first until admitted (BestEffortFIFO)."""
    PARKS_EQUIVALENT: ClassVar[bool]
    """Whether a head parked for not fitting parks every queued workload of its shape with it,
    until the next requeue (BestEffortFIFO, as Kueue's SchedulingEquivalenceHashing)."""

    def requeue_immediately(self, reason: RequeueReason) -> bool:
        """``True`` puts the head straight back in the heap; ``False`` parks it as inadmissible."""
        ...


def ordering(strategy: QueueingStrategy) -> OrderKey:
    """The strategy's ``order_key(info)`` if it has one (smallest first), else Kueue's order:
    higher priority, then older queue time, then UID."""
    custom: OrderKey | None = getattr(strategy, "order_key", None)
    return custom if custom is not None else WorkloadInfo.order_key


def orders_as_kueue(strategy: QueueingStrategy) -> bool:
    """Whether ``ordering`` gives Kueue's order, whose keys all have the same three items."""
    return getattr(strategy, "order_key", None) is None
