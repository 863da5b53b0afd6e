"""The simulated cluster's Events wait for a lull, in order, and never longer than the cap."""

from __future__ import annotations

import asyncio
import contextlib

from kq.sandbox.cluster import event_sink
from kq.sandbox.cluster.actions import Event, Ref
from kq.sandbox.cluster.event_sink import EventSink


class Recorded(EventSink):
    """The sink's timing without an API server: each write is noted with its loop time."""

    def __init__(self) -> None:
        super().__init__(client=None)  # type: ignore[arg-type]  # _write never uses it
        self.written: list[tuple[str, float]] = []

    async def _write(self, event: Event) -> None:
        self.written.append((event.reason, asyncio.get_running_loop().time()))


def event(reason: str) -> Event:
    return Event(Ref("v1", "Pod", "default", "p", "uid"), reason, "message")


async def run_with(sink: Recorded, feed: list[tuple[float, str]], wait: float) -> float:
    """Run the sink, queue ``feed``'s Events at their offsets; the loop time it started."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    task = asyncio.create_task(sink.run())
    for at, reason in feed:
        await asyncio.sleep(max(0.0, started + at - loop.time()))
        sink.add(event(reason))
    await asyncio.sleep(max(0.0, started + wait - loop.time()))
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return started


async def test_a_burst_is_written_after_it_ends_in_order() -> None:
    sink = Recorded()
    burst = [(0.01 * i, f"e{i}") for i in range(5)]
    started = await run_with(sink, burst, wait=0.5)
    assert [r for r, _ in sink.written] == [f"e{i}" for i in range(5)]
    last_added = started + 0.04
    assert all(t >= last_added + event_sink.QUIET_SECONDS for _, t in sink.written)


async def test_a_burst_that_never_pauses_is_written_within_the_cap() -> None:
    sink = Recorded()
    every = event_sink.QUIET_SECONDS / 2
    count = int(1.5 * event_sink.MAX_DELAY_SECONDS / every)
    started = await run_with(sink, [(every * i, f"e{i}") for i in range(count)], wait=2.5)
    first_written = sink.written[0][1]
    assert first_written - started < event_sink.MAX_DELAY_SECONDS + 0.2
    assert [r for r, _ in sink.written] == [f"e{i}" for i in range(count)]


async def test_cancelled_it_still_writes_what_is_queued() -> None:
    sink = Recorded()
    await run_with(sink, [(0.0, "last")], wait=0.0)
    assert [r for r, _ in sink.written] == ["last"]
