"""Kueue's queueing strategies: StrictFIFO blocks on its head, BestEffortFIFO parks it."""

from __future__ import annotations

from typing import ClassVar

from kq.plugin import Register, RequeueReason, hookimpl


class StrictFIFO:
    """Every failed head goes straight back, so nothing behind it is tried."""

    NAME: ClassVar[str] = "StrictFIFO"
    STICKY_PREEMPTOR: ClassVar[bool] = False
    PARKS_EQUIVALENT: ClassVar[bool] = False

    def requeue_immediately(self, reason: RequeueReason) -> bool:
        return reason is not RequeueReason.NAMESPACE_MISMATCH


class BestEffortFIFO:
    """Only heads that nearly made it go back; the rest wait for a cluster event."""

    NAME: ClassVar[str] = "BestEffortFIFO"
    STICKY_PREEMPTOR: ClassVar[bool] = True
    PARKS_EQUIVALENT: ClassVar[bool] = True

    def requeue_immediately(self, reason: RequeueReason) -> bool:
        return reason in (RequeueReason.FAILED_AFTER_NOMINATION, RequeueReason.PENDING_PREEMPTION)


@hookimpl(trylast=True)
def kq_register_queueing_strategies(register: Register) -> None:
    register(StrictFIFO)
    register(BestEffortFIFO)
