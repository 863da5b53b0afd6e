"""The simulated cluster's Events, written by a task of their own.

A Kubernetes controller never waits for its Events: client-go's recorder hands them to a
broadcaster whose own goroutine writes them. So the driver queues them and this task writes
them, in order, while the loop goes on with the writes that move the cluster on (a pod bound,
started, deleted) instead of waiting for three Events after each pod it starts. Cancelled, the
task still writes what is queued, for up to ``DRAIN_SECONDS``.

In a cluster those goroutines run on other cores; here every component shares one event loop,
so Events also wait for a lull: they are written once none has been queued for
``QUIET_SECONDS``, or ``MAX_DELAY_SECONDS`` after the first of them, whichever comes first. A
burst (a slice failing, a JobSet restarting) then runs to its end before its Events are written.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

import structlog

from kq.runtime.client import KubeClient
from kq.runtime.events import EventRecorder
from kq.sandbox.cluster.actions import Event

log = structlog.get_logger("kq.sandbox.cluster.event_sink")

DRAIN_SECONDS = 5.0
QUIET_SECONDS = 0.05
MAX_DELAY_SECONDS = 1.0


class EventSink:
    """A FIFO of Events and one recorder per source (each with client-go's correlator)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.queue: deque[Event] = deque()
        self.pending = asyncio.Event()
        self.recorders: dict[str, EventRecorder] = {}
        self._last_added = 0.0

    def add(self, event: Event) -> None:
        self.queue.append(event)
        self._last_added = asyncio.get_running_loop().time()
        self.pending.set()

    async def run(self) -> None:
        """Write queued Events until cancelled, then the ones left (what just happened)."""
        try:
            while True:
                await self.pending.wait()
                await self._lull()
                self.pending.clear()
                for _ in range(len(self.queue)):
                    await self._write(self.queue.popleft())
        except asyncio.CancelledError:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(DRAIN_SECONDS):
                    while self.queue:
                        await self._write(self.queue.popleft())
            raise

    async def _lull(self) -> None:
        """Return once no Event has been queued for a while, or the first has waited enough."""
        loop = asyncio.get_running_loop()
        latest = loop.time() + MAX_DELAY_SECONDS
        while (now := loop.time()) < latest:
            quiet = self._last_added + QUIET_SECONDS
            if now >= quiet:
                return
            await asyncio.sleep(min(quiet, latest) - now)

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
