"""The simulated cluster's Events, written by a task of their own.

A Kubernetes controller never waits for its Events: client-go's recorder hands them to a
broadcaster whose own goroutine writes them. Here they share one event loop with the writes that
move the cluster on (a pod bound, started, deleted), so the driver queues them and this task
writes them, in order, while the driver loop waits for work; an Event that has waited
``max_delay`` is written even while the loop is busy, so a cluster that never rests still
records them. Cancelled, the task still writes what is queued, for up to ``DRAIN_SECONDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque

import structlog

from kq.runtime.client import KubeClient
from kq.runtime.events import EventRecorder
from kq.sandbox.cluster.actions import Event

log = structlog.get_logger("kq.sandbox.cluster.event_sink")

MAX_DELAY = 0.5
"""Wall seconds an Event may wait for the driver loop to rest."""
DRAIN_SECONDS = 5.0


class EventSink:
    """A FIFO of Events and one recorder per source (each with client-go's correlator)."""

    def __init__(self, client: KubeClient, max_delay: float = MAX_DELAY) -> None:
        self.client = client
        self.max_delay = max_delay
        self.queue: deque[tuple[float, Event]] = deque()
        self.pending = asyncio.Event()
        self.idle = asyncio.Event()
        """Set by the driver loop while it waits for work."""
        self.recorders: dict[str, EventRecorder] = {}

    def add(self, event: Event) -> None:
        self.queue.append((time.monotonic(), event))
        self.pending.set()

    async def run(self) -> None:
        """Write queued Events until cancelled, then the ones left (what just happened)."""
        try:
            while True:
                await self.pending.wait()
                while self.queue:
                    await self._turn()
                    await self._write(self.queue.popleft()[1])
                self.pending.clear()
        except asyncio.CancelledError:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(DRAIN_SECONDS):
                    while self.queue:
                        await self._write(self.queue.popleft()[1])
            raise

    async def _turn(self) -> None:
        """Wait until the driver loop rests or the oldest Event has waited ``max_delay``."""
        due = self.queue[0][0] + self.max_delay - time.monotonic()
        if self.idle.is_set() or due <= 0:
            return
        try:
            async with asyncio.timeout(due):
                await self.idle.wait()
        except TimeoutError:
            pass

    async def _write(self, event: Event) -> None:
        source = event.source or "kq-sandbox"
        recorder = self.recorders.get(source)
        if recorder is None:
            recorder = self.recorders[source] = EventRecorder(self.client, source)
        ref = event.regarding
        regarding = {
            "apiVersion": ref.api_version,
            "kind": ref.kind,
            "metadata": {"name": ref.name, "namespace": ref.namespace, "uid": ref.uid},
        }
        # The recorder logs and counts its own API errors; anything else must not end the task.
        try:
            await recorder.record(regarding, event.type, event.reason, event.message)
        except Exception:
            log.exception("event not recorded", reason=event.reason, regarding=ref.name)
