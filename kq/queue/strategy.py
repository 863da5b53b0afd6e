"""The queueing-strategy contract: what to do with a head that was not admitted."""

from __future__ import annotations

from typing import ClassVar, Protocol

from kq.queue.requeue import RequeueReason


class QueueingStrategy(Protocol):
    """Named by ``spec.queueingStrategy``; decides whether a failed head blocks its queue."""

    NAME: ClassVar[str]
    STICKY_PREEMPTOR: ClassVar[bool]
    """Whether a head that issued preemptions stays first until admitted (BestEffortFIFO)."""
    PARKS_EQUIVALENT: ClassVar[bool]
    """Whether a head parked for not fitting parks every queued workload of its shape with it,
    until the next requeue (BestEffortFIFO, as Kueue's SchedulingEquivalenceHashing)."""

    def requeue_immediately(self, reason: RequeueReason) -> bool:
        """``True`` puts the head straight back in the heap; ``False`` parks it as inadmissible."""
        ...
