"""A keyed work queue with client-go's guarantees, for level-triggered reconcilers.

A key is queued at most once however often it is added; a key being processed is never handed
out again until ``done``, and if it was re-added meanwhile it is queued again then. Failures
requeue with per-key exponential backoff; ``add_after`` delays a key. Each queued key carries
links to the spans that added it, so the reconcile's span joins every trace that caused it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field

from opentelemetry import trace

from kq.observability import metrics

MAX_LINKS = 16


class ShutDown(Exception):
    """The queue was shut down and has nothing left to hand out."""


@dataclass(frozen=True, slots=True)
class WorkItem:
    key: str
    links: tuple[trace.Link, ...] = ()


@dataclass
class ItemBackoff:
    """Per-key exponential delays, client-go's default: 5 ms doubling to 1000 s."""

    base: float = 0.005
    cap: float = 1000.0
    failures: dict[str, int] = field(default_factory=dict)

    def when(self, key: str) -> float:
        count = self.failures.get(key, 0)
        self.failures[key] = count + 1
        return float(min(self.cap, self.base * 2**count))

    def forget(self, key: str) -> None:
        self.failures.pop(key, None)

    def retries(self, key: str) -> int:
        return self.failures.get(key, 0)


class WorkQueue:
    """Keys in FIFO order, de-duplicated, one in flight at a time per key."""

    def __init__(self, name: str, backoff: ItemBackoff | None = None) -> None:
        self.name = name
        self._backoff = backoff or ItemBackoff()
        self._queue: deque[str] = deque()
        self._dirty: dict[str, list[trace.Link]] = {}
        self._added_at: dict[str, float] = {}
        self._processing: set[str] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self._ready = asyncio.Event()
        self._shutting_down = False
        self._depth = metrics.workqueue_depth.labels(name)
        self._adds = metrics.workqueue_adds_total.labels(name)
        self._latency = metrics.workqueue_queue_duration_seconds.labels(name)
        self._retries = metrics.workqueue_retries_total.labels(name)
        self.work_duration = metrics.workqueue_work_duration_seconds.labels(name)

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: str) -> None:
        """Queue ``key`` unless it already waits; remember the caller's span as a link."""
        if self._shutting_down:
            return
        self._adds.inc()
        links = self._dirty.get(key)
        span = trace.get_current_span().get_span_context()
        if links is not None:
            if span.is_valid and len(links) < MAX_LINKS:
                links.append(trace.Link(span))
            return
        self._dirty[key] = [trace.Link(span)] if span.is_valid else []
        if key in self._processing:
            return  # queued again by ``done``
        self._push(key)

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        if self._shutting_down:
            return
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle

        def fire() -> None:
            self._timers.discard(handle)
            self.add(key)

        handle = loop.call_later(delay, fire)
        self._timers.add(handle)

    def add_rate_limited(self, key: str) -> None:
        """Requeue after a failure, later each time until ``forget``."""
        self._retries.inc()
        self.add_after(key, self._backoff.when(key))

    def forget(self, key: str) -> None:
        self._backoff.forget(key)

    def retries(self, key: str) -> int:
        return self._backoff.retries(key)

    async def get(self) -> WorkItem:
        """The next key, marked in flight; raises ``ShutDown`` once shut down and empty."""
        while not self._queue:
            if self._shutting_down:
                raise ShutDown(self.name)
            self._ready.clear()
            await self._ready.wait()
        key = self._queue.popleft()
        self._depth.set(len(self._queue))
        self._latency.observe(time.monotonic() - self._added_at.pop(key))
        self._processing.add(key)
        return WorkItem(key, tuple(self._dirty.pop(key)))

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            self._push(key)

    def shut_down(self) -> None:
        """Stop accepting keys; ``get`` hands out what is already queued, then ``ShutDown``."""
        self._shutting_down = True
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
        self._ready.set()

    def _push(self, key: str) -> None:
        self._queue.append(key)
        self._added_at[key] = time.monotonic()
        self._depth.set(len(self._queue))
        self._ready.set()
