"""Explanations never crowd out decisions: events are bounded, stale pending words skipped."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from kq.controllers.decisions import DecisionWriter, in_flight_bound
from kq.controllers.feed import CoreFeed
from kq.controllers.writer import MAX_QUEUED_EVENTS, WorkloadWriter
from kq.queue.requeue import RequeueReason
from kq.runtime.client import KubeClient
from kq.runtime.events import EventRecorder
from kq.runtime.store import Store
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Pending
from tests.harness import eventually


class StalledRecorder:
    """A recorder whose server never answers, as when the client limiter holds every POST."""

    def __init__(self) -> None:
        self.started = 0
        self.release = asyncio.Event()

    async def record(
        self, obj: dict[str, Any], kind: str, reason: str, message: str, annotations: object
    ) -> None:
        self.started += 1
        await self.release.wait()


async def test_events_beyond_the_queue_are_dropped_and_counted() -> None:
    recorder = StalledRecorder()
    writer = WorkloadWriter(
        cast(KubeClient, None), cast(EventRecorder, recorder), is_leader=lambda: True
    )
    obj = {"metadata": {"name": "w", "namespace": "ns"}}
    for _ in range(MAX_QUEUED_EVENTS + 5):
        writer.event(obj, "Pending", "waiting")
    await asyncio.sleep(0)
    assert recorder.started == MAX_QUEUED_EVENTS
    assert writer.dropped_events == 5
    recorder.release.set()

    async def drained() -> bool:
        return not writer._events  # the released Events finished and left the queue

    await eventually(drained, "the released Events to finish", interval=0.001)
    writer.event(obj, "Pending", "room again")
    await asyncio.sleep(0)
    assert recorder.started == MAX_QUEUED_EVENTS + 1
    await writer.close()


class GatedWriter:
    """Stands in for the status writer: records each patch, answers once released."""

    def __init__(self) -> None:
        self.patches: list[dict[str, Any]] = []
        self.events: list[tuple[str, str]] = []
        self.open = asyncio.Event()

    async def patch_status(
        self, obj: dict[str, Any], patch: dict[str, Any]
    ) -> dict[str, Any] | None:
        self.patches.append(patch)
        await self.open.wait()
        meta = {
            **obj["metadata"],
            "resourceVersion": str(int(obj["metadata"]["resourceVersion"]) + 1),
        }
        return {**obj, "metadata": meta, **patch}

    def event(
        self,
        obj: dict[str, Any],
        reason: str,
        message: str,
        warning: bool = False,
        trace_id: str = "",
    ) -> None:
        self.events.append((reason, message))


async def test_pending_words_superseded_while_queued_are_not_written() -> None:
    store = Store()
    store.upsert({"metadata": {"name": "w", "namespace": "ns", "resourceVersion": "1"}})
    writer = GatedWriter()
    # The writer asks the feed's scheduler which cycle decided, for the event's trace id.
    feed = SimpleNamespace(scheduler=SimpleNamespace(last={}))
    decisions = DecisionWriter(cast(CoreFeed, feed), store, cast(WorkloadWriter, writer))
    result = CycleResult(
        tuple(
            Pending("ns/w", "cq", "WaitingForQuota", f"{n} more needed", RequeueReason.NO_FIT)
            for n in (3, 2, 1)
        ),
        entries=3,
    )
    decisions.apply(result, decided_at=0.0)
    writer.open.set()
    await decisions.drain()
    assert len(writer.patches) == 1
    (condition,) = [
        c for c in writer.patches[0]["status"]["conditions"] if c["type"] == "QuotaReserved"
    ]
    assert condition["message"] == "1 more needed"
    assert writer.events == [("Pending", "1 more needed")]


def test_in_flight_bound_follows_the_client_limit() -> None:
    assert in_flight_bound(50) == 32  # Kueue's perf-test limiter: keep the queue short
    assert in_flight_bound(300) == 150  # kq's default: half a second of writes
    assert in_flight_bound(1e6) == 256  # unthrottled: the server sets the pace
