"""Drive a reconciler from a work queue: bounded workers, retries, a span per reconcile."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Protocol

import structlog
from opentelemetry import trace

from kq.runtime.workqueue import ShutDown, WorkQueue

log = structlog.get_logger("kq.runtime.reconciler")
tracer = trace.get_tracer("kq.runtime")


@dataclass(frozen=True)
class Result:
    """What to do with the key after a successful reconcile: nothing, or look again later."""

    requeue_after: float | None = None


class Reconciler(Protocol):
    """Level-triggered: reads the key's current state from caches and converges it."""

    async def reconcile(self, key: str) -> Result: ...


class Controller:
    """``workers`` tasks pulling keys from ``queue`` into ``reconciler``.

    An exception requeues the key with per-key backoff; success forgets its failures.
    """

    def __init__(
        self, name: str, reconciler: Reconciler, *, workers: int = 1, queue: WorkQueue | None = None
    ) -> None:
        self.name = name
        self.reconciler = reconciler
        self.queue = queue if queue is not None else WorkQueue(name)
        self.workers = workers

    async def run(self) -> None:
        """Work until the queue is shut down and drained, or until cancelled."""
        async with asyncio.TaskGroup() as group:
            for _ in range(self.workers):
                group.create_task(self._worker())

    async def _worker(self) -> None:
        while True:
            try:
                item = await self.queue.get()
            except ShutDown:
                return
            started = time.monotonic()
            try:
                await self._reconcile_one(item.key, item.links)
            finally:
                self.queue.work_duration.observe(time.monotonic() - started)
                self.queue.done(item.key)

    async def _reconcile_one(self, key: str, links: tuple[trace.Link, ...]) -> None:
        with tracer.start_as_current_span(
            "kq.reconcile",
            links=links,
            attributes={"kq.controller": self.name, "kq.key": key},
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = await self.reconciler.reconcile(key)
            except Exception as exc:
                span.record_exception(exc)
                span.set_status(trace.StatusCode.ERROR, str(exc))
                log.warning(
                    "reconcile failed",
                    controller=self.name,
                    key=key,
                    retries=self.queue.retries(key),
                    exc_info=True,
                )
                self.queue.add_rate_limited(key)
                return
        self.queue.forget(key)
        if result.requeue_after is not None:
            self.queue.add_after(key, result.requeue_after)
