"""Events wait in a bounded queue: beyond it they are dropped, never piled up."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from kq.controllers.writer import MAX_QUEUED_EVENTS, WorkloadWriter
from kq.runtime.client import KubeClient
from kq.runtime.events import EventRecorder


class StalledRecorder:
    """A recorder whose server never answers, as when the client limiter holds every POST."""

    def __init__(self) -> None:
        self.started = 0
        self.release = asyncio.Event()

    async def record(self, obj: dict[str, Any], kind: str, reason: str, message: str) -> None:
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
    await asyncio.sleep(0.01)
    writer.event(obj, "Pending", "room again")
    await asyncio.sleep(0)
    assert recorder.started == MAX_QUEUED_EVENTS + 1
    await writer.close()
