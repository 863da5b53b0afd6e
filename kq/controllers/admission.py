"""The admission controller: informers feed the core, cycles run on change, decisions are written.

Entry point for the ``kq run`` process::

    def _admission_moved(change: Change) -> bool:
    admission = (change.obj.get("status") or {}).get("admission")
    before = ((change.old or {}).get("status") or {}).get("admission")
    return admission is not None and admission != before


async def run_admission(
        client: KubeClient,
        *,
        is_leader: Callable[[], bool] | asyncio.Event | None = None,
        plugins: AdmissionPlugins | None = None,
        informers: Mapping[Resource, Informer] | None = None,
        event_namespace: str = "kq-system",
        pods_ready: WaitForPodsReady | None = None,
        observers: Observers | None = None,
    ) -> None

It runs until cancelled. ``is_leader`` gates every write (None: always leading); ``informers``
lets the process share informers it already runs (missing kinds are started here);
``event_namespace`` receives the Events about cluster-scoped objects.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping

import structlog

from kq.config import PluginsConfig, WaitForPodsReady
from kq.controllers import metrics
from kq.controllers.decisions import DecisionWriter, in_flight_bound
from kq.controllers.feed import CoreFeed
from kq.controllers.hotswap import HotSwap
from kq.controllers.pods import TopologyPods
from kq.controllers.queue_status import QueueStatusWriter
from kq.controllers.writer import WorkloadWriter
from kq.plugins import build_plugin_manager
from kq.runtime.client import KubeClient
from kq.runtime.events import EventRecorder
from kq.runtime.informer import Informer
from kq.runtime.resources import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    COHORTS,
    LIMIT_RANGES,
    LOCAL_QUEUES,
    NAMESPACES,
    NODES,
    PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    TOPOLOGIES,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    Resource,
)
from kq.runtime.store import Change, EventType, object_key
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit
from kq.scheduler.observers import Observers
from kq.scheduler.plugins import AdmissionPlugins, load_admission_plugins

log = structlog.get_logger("kq.controllers.admission")

LeaderGate = Callable[[], bool] | asyncio.Event

WATCHED = (
    NAMESPACES,
    LIMIT_RANGES,
    PRIORITY_CLASSES,
    WORKLOAD_PRIORITY_CLASSES,
    NODES,
    TOPOLOGIES,
    RESOURCE_FLAVORS,
    ADMISSION_CHECKS,
    COHORTS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    WORKLOADS,
)
# How often to look whether leadership arrived or was lost while idle.
LEADER_POLL_S = 0.2
# Minimum interval between ClusterQueue/LocalQueue status syncs: Kueue batches these to 1 s.
QUEUE_STATUS_PERIOD_S = 1.0


def feed_handlers(feed: CoreFeed) -> dict[Resource, Callable[[Change], None]]:
    """Which of the feed's handlers each watched kind's informer events go to."""
    return {
        NAMESPACES: feed.namespace,
        LIMIT_RANGES: feed.limit_range,
        PRIORITY_CLASSES: feed.priority_class,
        WORKLOAD_PRIORITY_CLASSES: feed.workload_priority_class,
        NODES: feed.topology_feed.node,
        TOPOLOGIES: feed.topology_feed.topology,
        RESOURCE_FLAVORS: feed.resource_flavor,
        ADMISSION_CHECKS: feed.admission_check,
        COHORTS: feed.cohort,
        CLUSTER_QUEUES: feed.cluster_queue,
        LOCAL_QUEUES: feed.local_queue,
        WORKLOADS: feed.workload,
    }


def _gate(is_leader: LeaderGate | None) -> Callable[[], bool]:
    if is_leader is None:
        return lambda: True
    if isinstance(is_leader, asyncio.Event):
        return is_leader.is_set
    return is_leader


class AdmissionController:
    """Keeps the core fed from informers and writes what each scheduling cycle decides."""

    def __init__(
        self,
        client: KubeClient,
        *,
        is_leader: LeaderGate | None = None,
        plugins: AdmissionPlugins | None = None,
        informers: Mapping[Resource, Informer] | None = None,
        event_namespace: str = "kq-system",
        on_cycle: Callable[[CycleResult, float, float], None] | None = None,
        pods_ready: WaitForPodsReady | None = None,
        observers: Observers | None = None,
    ) -> None:
        """``on_cycle`` sees each cycle's result, its wall seconds and its thread's CPU seconds
        (benchmarks: a busy machine stretches the first, not the second);
        ``pods_ready``: the waitForPodsReady configuration, when enabled; ``observers``: the
        ``kq_on_decision``/``kq_on_cycle_end`` implementations of the plugins."""
        self._is_leader = _gate(is_leader)
        self._block = pods_ready is not None and pods_ready.block_admission
        self._on_cycle = on_cycle
        plugins = plugins or load_admission_plugins(build_plugin_manager(PluginsConfig()))
        given = dict(informers or {})
        self._owned = [Informer(client, r) for r in WATCHED if r not in given]
        self.informers = {**given, **{i.resource: i for i in self._owned}}
        self._wake = asyncio.Event()
        by_eviction = pods_ready is None or pods_ready.requeuing_strategy.timestamp == "Eviction"
        self.feed = CoreFeed(
            plugins,
            self.informers[WORKLOADS].store.values,
            self._wake.set,
            by_eviction,
            observers,
        )
        metrics.ANCESTRY.feed = self.feed
        recorder = EventRecorder(client, "kq-admission", event_namespace)
        self.writer = WorkloadWriter(client, recorder, self._is_leader)
        self.queue_status = QueueStatusWriter(
            client,
            self.feed,
            self.informers[CLUSTER_QUEUES].store,
            self.informers[LOCAL_QUEUES].store,
            self._is_leader,
            self.informers[COHORTS].store,
        )
        self.decisions = DecisionWriter(
            self.feed,
            self.informers[WORKLOADS].store,
            self.writer,
            in_flight_bound(client.settings.qps),
        )
        self.topology_pods = TopologyPods(client, self.informers[WORKLOADS].store, self._is_leader)
        self._owned.append(self.topology_pods.informer)
        self.hot_swap = HotSwap(
            self.feed.cache,
            plugins,
            self.informers[WORKLOADS].store,
            self.writer,
            self.topology_pods,
        )
        self._queues_dirty = False
        self._queues_synced = 0.0
        self._queue_sync: asyncio.Task[None] | None = None
        handlers = {**feed_handlers(self.feed), WORKLOADS: self._workload}
        # Specs before workloads, so the first workloads find their queues.
        for resource in WATCHED:
            self.informers[resource].add_handler(handlers[resource])

    def _workload(self, change: Change) -> None:
        self.feed.workload(change)
        if change.type is EventType.DELETED:
            self.decisions.forget(object_key(change.obj))
        elif _admission_moved(change):
            self.topology_pods.workload_changed(object_key(change.obj))

    async def run(self) -> None:
        """Until cancelled: informers, then (once all synced) cycles whenever something changed."""
        tasks = [
            asyncio.create_task(i.run(), name=f"informer-{i.resource.plural}") for i in self._owned
        ]
        try:
            await asyncio.gather(*(i.wait_synced() for i in self.informers.values()))
            log.info("admission controller synced")
            await self._loop()
        finally:
            await self.decisions.close()
            await self.hot_swap.close()
            await self.topology_pods.close()
            await self.writer.close()
            if self._queue_sync is not None:
                tasks.append(self._queue_sync)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _loop(self) -> None:
        leading = False
        while True:
            if not self._is_leader():
                leading = False
                await asyncio.sleep(LEADER_POLL_S)
                continue
            if not leading:
                leading = True
                self._wake.set()  # a new term starts from everything the informers hold
            try:
                # Bounded, so a lost-then-regained leadership is noticed without an event.
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancel that
                # arrives as the event is set, and the controller would never stop.
                async with asyncio.timeout(self._poll_s()):
                    await self._wake.wait()
            except TimeoutError:
                self._sync_queue_status()
                queues = self.feed.scheduler.queues
                due = queues.requeue_due()
                if queues.has_words_to_tell() or (due is not None and due <= time.time()):
                    self._wake.set()  # a quiet queue's parked shape: its words or retry due
                continue
            self._wake.clear()
            self.decisions.forget_delivered()
            self.decisions.release_evicted()
            self.decisions.evict_untrusted()
            self.hot_swap.run()
            self.decisions.write_unqueueable()
            await self.decisions.room()
            if self._block and self.feed.not_ready:
                # blockAdmission: nothing new starts while an admitted workload's pods are not
                # ready; the PodsReady (or eviction) event of the last one wakes us again.
                # Retries due meanwhile are carried out, or the wait for them would spin.
                self.feed.scheduler.queues.take_requeues(time.time())
                continue
            started, cpu = time.perf_counter(), time.thread_time()
            now = time.time()
            result = self.feed.scheduler.run_cycle(now)
            seconds = time.perf_counter() - started
            metrics.cycle(result, seconds)
            if self._on_cycle is not None:
                self._on_cycle(result, seconds, time.thread_time() - cpu)
            self.decisions.apply(result, now)
            self._queues_dirty = True
            self._sync_queue_status()
            if self._untried_heads(result):
                self._wake.set()
            # Let informer events and write completions in before the next cycle.
            await asyncio.sleep(0)

    def _poll_s(self) -> float:
        """How long to wait for an event: a paced retry due sooner shortens it."""
        due = self.feed.scheduler.queues.requeue_due()
        if due is None:
            return LEADER_POLL_S
        return min(LEADER_POLL_S, max(0.0, due - time.time()))

    def _sync_queue_status(self) -> None:
        """At most every ``QUEUE_STATUS_PERIOD_S``, in the background: a burst of cycles moves
        counts many times, and only the latest numbers are worth a write."""
        now = time.monotonic()
        if self._queue_sync is not None and not self._queue_sync.done():
            return
        if self._queues_dirty and now - self._queues_synced >= QUEUE_STATUS_PERIOD_S:
            self._queues_dirty = False
            self._queues_synced = now
            self._queue_sync = asyncio.create_task(self.queue_status.sync())

    def _untried_heads(self, result: CycleResult) -> bool:
        """Whether the next cycle would see a head this one did not.

        A head back in its heap (StrictFIFO, a sticky preemptor) would be popped and decided
        the same way again, so only a queue whose head left the heap (admitted, parked) and
        still has workloads waiting is worth another cycle; any other change wakes us anyway.
        """
        for decision in result.decisions:
            cq = (
                decision.admission.cluster_queue
                if isinstance(decision, Admit)
                else decision.cluster_queue
            )
            queue = self.feed.queues.queues.get(cq)
            if queue is None:
                continue
            key = decision.key
            if queue.contains(key) and not queue.is_parked(key):
                continue
            if queue.untried_count() > 0:
                return True
        return False


def _admission_moved(change: Change) -> bool:
    admission = (change.obj.get("status") or {}).get("admission")
    before = ((change.old or {}).get("status") or {}).get("admission")
    return admission is not None and admission != before


async def run_admission(
    client: KubeClient,
    *,
    is_leader: LeaderGate | None = None,
    plugins: AdmissionPlugins | None = None,
    informers: Mapping[Resource, Informer] | None = None,
    event_namespace: str = "kq-system",
    pods_ready: WaitForPodsReady | None = None,
    observers: Observers | None = None,
) -> None:
    """Run the admission controller until cancelled (see the module docstring)."""
    controller = AdmissionController(
        client,
        is_leader=is_leader,
        plugins=plugins,
        informers=informers,
        event_namespace=event_namespace,
        pods_ready=pods_ready,
        observers=observers,
    )
    await controller.run()
