"""Turning a cycle's decisions into Workload status writes and Events.

Writes run in the background, as Kueue's scheduler issues them, so the next cycle does not
wait for this one's round trips: an admission is assumed in the cache before it is written
and forgotten if the write fails, so no later cycle can hand out the same quota twice.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from kq.api.workload import UNTRUSTED_ADMISSION
from kq.controllers import metrics
from kq.controllers.feed import CoreFeed
from kq.controllers.patches import (
    admit_patch,
    needs_release,
    pending_patch,
    preempt_patch,
    release_patch,
    rewords,
    untrusted_message,
    untrusted_patch,
)
from kq.controllers.words import WordsPacer
from kq.controllers.writer import WorkloadWriter
from kq.runtime.store import Store, object_key
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Pending, Victim

Object = dict[str, Any]

# Parallel victim patches, as upstream's preemptor.
PREEMPTION_PARALLELISM = 8
# Pending-words writes at once. They explain while admissions act: under a client limiter
# admissions must not queue behind a backlog of explanations, and only each workload's
# latest words are worth writing.
PENDING_PARALLELISM = 8
# Seconds of the client's QPS that decisive writes (admit, evict, release) may queue before
# the next cycle waits. An assumed admission holds quota until its write lands, so a deep
# queue behind a client limiter locks quota up in writes that have not happened.
QUEUED_WRITE_SECONDS = 0.5
IN_FLIGHT_BOUNDS = (32, 256)


def in_flight_bound(qps: float) -> int:
    """Decisive writes in flight before the next cycle waits, for a client of ``qps``."""
    low, high = IN_FLIGHT_BOUNDS
    return max(low, min(high, int(qps * QUEUED_WRITE_SECONDS)))


class DecisionWriter:
    """Assumed admissions confirmed or forgotten, pending words, evictions, releases."""

    def __init__(
        self,
        feed: CoreFeed,
        workloads: Store,
        writer: WorkloadWriter,
        max_in_flight: int = IN_FLIGHT_BOUNDS[0],
    ) -> None:
        self._feed = feed
        self._max_in_flight = max_in_flight
        self._store = workloads
        self._writer = writer
        self._preempting = asyncio.Semaphore(PREEMPTION_PARALLELISM)
        # The latest pending words wanted per workload, oldest decision first.
        self._words: dict[str, tuple[str, str]] = {}
        self._words_ready = asyncio.Event()
        self._explainers: list[asyncio.Task[None]] = []
        self._explaining: set[asyncio.Task[None]] = set()
        self._pacer = WordsPacer(self._want_again)
        # Pending words written (or being written) per workload, and from which resourceVersion.
        self._pending_written: dict[str, tuple[str, str, str]] = {}
        # Per workload: (the store's resourceVersion, our newer write's response).
        self._ahead: dict[str, tuple[str, Object]] = {}
        self._in_flight: set[asyncio.Task[None]] = set()
        self._last_write: dict[str, asyncio.Task[None]] = {}
        self.admissions = 0
        self._held: set[str] = set()
        self.writes: Counter[str] = Counter()
        """Workload status writes attempted, by purpose (benchmarks print them)."""

    def apply(self, result: CycleResult, decided_at: float) -> None:
        """Write a cycle's decisions; admissions carry ``decided_at``, the time the cycle
        assumed them, as Kueue stamps QuotaReserved/Admitted when its cache assumes."""
        for decision in result.decisions:
            key = decision.key
            if isinstance(decision, Admit):
                self._unwant(key)
                self._pacer.ended(key)
                self._spawn(key, partial(self._admit, decision, decided_at))
            elif isinstance(decision, Pending):
                self._want_words(key, decision.reason, decision.message)
            else:
                cq = decision.cluster_queue
                for victim in decision.victims:
                    self._unwant(victim.key)
                    self._pacer.ended(victim.key)
                    self._spawn(victim.key, partial(self._evict, victim.key, victim, cq))
                self._want_words(key, decision.reason, decision.message)
        for words in result.held:
            self._want_words(words.key, words.reason, words.message, held=True)

    def _spawn(
        self, key: str, write: Callable[[], Coroutine[Any, Any, None]], *, decisive: bool = True
    ) -> asyncio.Task[None]:
        """Writes to one workload run in order, each from the one before's response: two in
        flight from the same version would make the second fail its precondition."""
        task = asyncio.create_task(self._after(self._last_write.get(key), write))
        self._last_write[key] = task
        (self._in_flight if decisive else self._explaining).add(task)
        task.add_done_callback(partial(self._done, key))
        return task

    def _want_words(self, key: str, reason: str, message: str, held: bool = False) -> None:
        """``held``: words for a workload no cycle looked at (counted apart in ``writes``)."""
        if held:
            self._held.add(key)
        else:
            self._held.discard(key)
        self._unwant(key)
        self._pacer.wanted(key)
        self._words[key] = (reason, message)
        self._words_ready.set()
        if not self._explainers:
            self._explainers = [
                asyncio.create_task(self._explainer()) for _ in range(PENDING_PARALLELISM)
            ]

    def _want_again(self, key: str, reason: str, message: str) -> None:
        self._want_words(key, reason, message, held=key in self._held)

    def _unwant(self, key: str) -> None:
        self._words.pop(key, None)
        self._pacer.drop(key)

    async def _explainer(self) -> None:
        """Writes the oldest wanted words, one workload at a time, until cancelled."""
        while True:
            if not self._words:
                self._words_ready.clear()
                await self._words_ready.wait()
                continue
            key = next(iter(self._words))
            reason, message = self._words.pop(key)
            write = partial(self._explain, key, reason, message)
            await asyncio.wait([self._spawn(key, write, decisive=False)])

    @staticmethod
    async def _after(
        previous: asyncio.Task[None] | None, write: Callable[[], Coroutine[Any, Any, None]]
    ) -> None:
        if previous is not None:
            await asyncio.wait([previous])
        await write()

    def _done(self, key: str, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        self._explaining.discard(task)
        if self._last_write.get(key) is task:
            del self._last_write[key]

    async def room(self) -> None:
        """Wait until fewer than ``max_in_flight`` decisive writes are outstanding."""
        while len(self._in_flight) >= self._max_in_flight:
            await asyncio.wait(self._in_flight, return_when=asyncio.FIRST_COMPLETED)

    async def drain(self) -> None:
        """Wait for every outstanding write, pending words included, deferred ones too
        (tests settle with it)."""
        while self._in_flight or self._explaining or self._words or self._pacer.timers():
            tasks = self._in_flight | self._explaining | self._pacer.timers()
            if tasks:
                await asyncio.wait(tasks)
            else:
                await asyncio.sleep(0)

    async def close(self) -> None:
        """Abandon outstanding writes: the process stops or lost leadership."""
        tasks = [*self._explainers, *self._in_flight, *self._explaining]
        for task in tasks:
            task.cancel()
        await self._pacer.close()  # its timers cancelled with the rest, before anything runs
        await asyncio.gather(*tasks, return_exceptions=True)
        self._explainers = []
        self._words.clear()

    def forget(self, key: str) -> None:
        """The workload is gone: nothing kept about it is of use any more."""
        self._pending_written.pop(key, None)
        self._held.discard(key)
        self._pacer.forget(key)

    def forget_delivered(self) -> None:
        """Drop our writes' responses once the watch has delivered them (or something newer)."""
        for key, (base, _) in list(self._ahead.items()):
            current = self._store.get(key)
            if current is None or _version(current) != base:
                del self._ahead[key]

    def _object(self, key: str) -> Object | None:
        """The newest version we know: our own last write while the watch has not caught up.

        Without it, a decision right after a write (pending words, then an admission) would
        be based on the version the write replaced and fail its precondition.
        """
        obj = self._store.get(key)
        ahead = self._ahead.get(key)
        if ahead is None:
            return obj
        base, newer = ahead
        if obj is not None and _version(obj) == base:
            return newer
        del self._ahead[key]  # the watch delivered our write, or something newer
        return obj

    async def _patch(self, obj: Object, patch: Object, purpose: str) -> Object | None:
        """``purpose`` names the write in ``writes``: admit, pending (a head's words), held
        (words of a workload held behind a head), evict, untrusted, release."""
        self.writes[purpose] += 1
        patched = await self._writer.patch_status(obj, patch)
        if patched is not None:
            key = object_key(obj)
            current = self._store.get(key)
            if current is not None and _version(current) != _version(patched):
                self._ahead[key] = (_version(current), patched)
        return patched

    async def _admit(self, decision: Admit, now: float) -> None:
        key = decision.key
        obj = self._object(key)
        cached = self._feed.cache.workload(key)
        patched = None
        if obj is not None:
            patched = await self._patch(obj, admit_patch(obj, decision, now), "admit")
        if obj is None or patched is None:
            # Quota back, and the workload back in its queue from its newest known version.
            self._feed.scheduler.forget(key)
            latest = self._object(key)
            if latest is not None:
                self._feed.refeed(latest)
            else:
                self._feed.changed()
            return
        self.admissions += 1
        cq = decision.admission.cluster_queue
        waited = now - cached.info.queue_time if cached is not None else 0.0
        cohorts = metrics.cohorts_above(self._feed, cq)
        metrics.quota_reserved(patched, cq, waited, not decision.admission_checks, cohorts)
        trace_id = self._trace_id(key)
        self._writer.event(
            patched,
            "QuotaReserved",
            f"Quota reserved in ClusterQueue {cq}, wait time since queued was {waited:.0f}s",
            trace_id=trace_id,
        )
        if not decision.admission_checks:
            self._writer.event(
                patched,
                "Admitted",
                f"Admitted by ClusterQueue {cq}, wait time since reservation was 0s",
                trace_id=trace_id,
            )

    def _trace_id(self, key: str) -> str:
        decided = self._feed.scheduler.last.get(key)
        return "" if decided is None else decided.trace_id

    async def _explain(self, key: str, reason: str, message: str) -> None:
        """``QuotaReserved=False`` and a Warning event, only when the words change, once the
        wait has lasted ``FIRST_WORDS_AFTER_S``, and a mere change of message at most once per
        ``WORDS_MIN_INTERVAL_S`` (``kq.controllers.words``); skipped when a decisive write
        about the same workload is queued behind it."""
        if self._last_write.get(key) is not asyncio.current_task():
            return
        obj = self._object(key)
        if obj is None or (obj.get("status") or {}).get("admission") is not None:
            return  # gone, or holding quota again: the words no longer apply
        version = obj["metadata"].get("resourceVersion", "")
        words = (reason, message, version)
        if self._pending_written.get(key) == words:
            return  # written from this version; its watch event has not arrived yet
        patch = pending_patch(obj, reason, message, time.time())
        if patch is None:
            return
        rewording, held = rewords(obj, reason), key in self._held
        if self._pacer.defer(key, reason, message, rewording=rewording, held=held):
            return
        self._pacer.written(key)
        self._pending_written[key] = words
        patched = await self._patch(obj, patch, "held" if held else "pending")
        if patched is None:
            if self._pending_written.get(key) == words:
                del self._pending_written[key]
            return
        self._writer.event(patched, "Pending", message, warning=True, trace_id=self._trace_id(key))

    async def _evict(self, key: str, victim: Victim, preempting_queue: str) -> None:
        obj = self._object(key)
        if obj is None:
            return
        patch = preempt_patch(obj, victim, time.time())
        if patch is None:
            return  # evicted or finished already: the preemptor waits for its quota
        # Read before the write: a bare victim's eviction releases it from the cache too.
        cached = self._feed.cache.workload(key)
        victim_queue = cached.info.cluster_queue if cached is not None else ""
        async with self._preempting:
            patched = await self._patch(obj, patch, "evict")
        if patched is not None:
            metrics.EVICTIONS.preempted(patched, victim_queue, preempting_queue, victim.reason)
            self._writer.event(patched, "Preempted", victim.message)

    def release_evicted(self) -> None:
        """Bare Workloads have no job to stop: clear their reservation, as upstream's
        workload controller does for workloads without a job."""
        for key in sorted(self._feed.to_release):
            self._spawn(key, partial(self._release, key))
            # The watch event of the write (or of whatever beat it) decides again.
            self._feed.to_release.discard(key)

    def evict_untrusted(self) -> None:
        """Quota holders whose admission kq could not have made: evicted, so their jobs stop
        and they queue again like any other; never counted meanwhile."""
        for key in sorted(self._feed.to_distrust):
            why = self._feed.scheduler.untrusted.get(key)
            if why is not None:
                self._spawn(key, partial(self._evict_untrusted, key, why))
        self._feed.to_distrust.clear()

    async def _evict_untrusted(self, key: str, why: str) -> None:
        obj = self._object(key)
        patch = None if obj is None else untrusted_patch(obj, why, time.time())
        if obj is None or patch is None:
            return
        patched = await self._patch(obj, patch, "untrusted")
        if patched is not None:
            self._writer.event(patched, UNTRUSTED_ADMISSION, untrusted_message(why), warning=True)

    async def _release(self, key: str) -> None:
        obj = self._object(key)
        if obj is not None and needs_release(obj):
            await self._patch(obj, release_patch(obj, time.time()), "release")

    def write_unqueueable(self) -> None:
        """What Kueue's workload controller says of workloads no cycle will look at."""
        blocked = {**self._feed.unqueueable, **self._feed.inactive_pending()}
        for key, message in blocked.items():
            obj = self._object(key)
            version = "" if obj is None else obj["metadata"].get("resourceVersion", "")
            if self._pending_written.get(key) != ("Inadmissible", message, version):
                self._want_words(key, "Inadmissible", message)


def _version(obj: Object) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))
