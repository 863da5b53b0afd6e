"""Work-queue and controller semantics: de-duplication, no concurrent key, retries, drain."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from kq.observability.metrics import REGISTRY
from kq.runtime.reconciler import Controller, Result
from kq.runtime.workqueue import ItemBackoff, ShutDown, WorkQueue
from tests.harness import eventually


def sample(name: str, queue: str) -> float:
    value = REGISTRY.get_sample_value(name, {"name": queue})
    return value if value is not None else 0.0


async def test_duplicate_adds_collapse_and_order_is_fifo() -> None:
    queue = WorkQueue("dedup")
    for key in ("a", "b", "a", "c", "b"):
        queue.add(key)
    assert len(queue) == 3
    assert [(await queue.get()).key for _ in range(3)] == ["a", "b", "c"]
    assert sample("workqueue_adds_total", "dedup") == 5
    assert sample("workqueue_depth", "dedup") == 0


async def test_key_readded_while_processing_comes_back_after_done() -> None:
    queue = WorkQueue("inflight")
    queue.add("a")
    item = await queue.get()
    queue.add("a")
    assert len(queue) == 0  # not handed out twice at once
    queue.done(item.key)
    assert (await queue.get()).key == "a"


async def test_add_after_and_rate_limited_backoff_grow() -> None:
    queue = WorkQueue("later", ItemBackoff(base=0.05))
    queue.add_after("a", 0.05)
    assert len(queue) == 0
    async with asyncio.timeout(1):
        assert (await queue.get()).key == "a"
    queue.done("a")
    backoff = ItemBackoff(base=0.05)
    delays = [backoff.when("x") for _ in range(4)]
    assert delays == [0.05, 0.1, 0.2, 0.4]
    backoff.forget("x")
    assert backoff.when("x") == 0.05
    queue.add_rate_limited("b")
    assert sample("workqueue_retries_total", "later") == 1


async def test_shutdown_drains_queued_keys_then_stops() -> None:
    queue = WorkQueue("drain")
    queue.add("a")
    queue.add_after("late", 10)
    queue.shut_down()
    queue.add("ignored")
    assert (await queue.get()).key == "a"
    with pytest.raises(ShutDown):
        await queue.get()


class Recorder:
    """Counts reconciles, tracks concurrency per key, fails the first ``failures`` times."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: Counter[str] = Counter()
        self.active: set[str] = set()
        self.overlap = False
        self.failures = failures

    async def reconcile(self, key: str) -> Result:
        self.overlap |= key in self.active
        self.active.add(key)
        await asyncio.sleep(0.01)
        self.active.discard(key)
        self.calls[key] += 1
        if self.failures:
            self.failures -= 1
            raise RuntimeError("transient")
        return Result()


async def test_controller_never_runs_a_key_concurrently_and_retries_failures() -> None:
    recorder = Recorder(failures=2)
    controller = Controller("ctl", recorder, workers=4, queue=WorkQueue("ctl", ItemBackoff(0.01)))
    task = asyncio.create_task(controller.run())
    for _ in range(20):
        controller.queue.add("a")
        controller.queue.add("b")
        await asyncio.sleep(0.003)

    def busy() -> bool:
        queue = controller.queue
        retrying = any(queue.retries(key) for key in "ab")
        return bool(recorder.failures or recorder.active or len(queue) or retrying)

    async def idle() -> bool:
        return not busy()

    await eventually(idle, "the workers to go idle", within=3, interval=0.01)
    controller.queue.shut_down()
    await task
    assert not recorder.overlap
    assert set(recorder.calls) == {"a", "b"}
    assert sample("workqueue_retries_total", "ctl") == 2


async def test_reconcile_span_links_to_the_spans_that_added_the_key() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    queue = WorkQueue("linked")
    with tracer.start_as_current_span("event-1") as first:
        queue.add("a")
    with tracer.start_as_current_span("event-2") as second:
        queue.add("a")
    item = await queue.get()
    assert [link.context for link in item.links] == [
        first.get_span_context(),
        second.get_span_context(),
    ]
    assert not trace.get_current_span().get_span_context().is_valid
