"""A plugin's order of a ClusterQueue's pending workloads, ahead of its queueing strategy's.

Returned by ``kq_queue_order`` for a ClusterQueue (admission fair sharing: the LocalQueue's
usage first). Its keys may change over time, say when usage moves: the queue is re-ordered
before the next heads are popped whenever ``revision()`` changed.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from kq.queue.requeue import RequeueReason
from kq.queue.strategy import QueueingStrategy, ordering
from kq.workload.info import WorkloadInfo


class QueueOrder(Protocol):
    """Keys compared before the strategy's (smallest first); pure and cheap."""

    def key(self, info: WorkloadInfo) -> tuple[Any, ...]: ...

    def revision(self) -> int:
        """Changes whenever some key may have changed since the last call."""
        ...


class Ordered:
    """A strategy whose ``order_key`` is ``order``'s key, then the strategy's own order."""

    NAME: ClassVar[str]
    STICKY_PREEMPTOR: ClassVar[bool]
    PARKS_EQUIVALENT: ClassVar[bool]

    def __init__(self, strategy: QueueingStrategy, order: QueueOrder) -> None:
        self.strategy = strategy
        self.order = order
        self.seen = order.revision()
        self._base = ordering(strategy)

    def __getattr__(self, name: str) -> Any:
        # NAME, STICKY_PREEMPTOR, PARKS_EQUIVALENT and any extra of the strategy's.
        return getattr(self.strategy, name)

    def requeue_immediately(self, reason: RequeueReason) -> bool:
        return self.strategy.requeue_immediately(reason)

    def order_key(self, info: WorkloadInfo) -> tuple[Any, ...]:
        return (*self.order.key(info), *self._base(info))

    def stale(self) -> bool:
        return self.order.revision() != self.seen
