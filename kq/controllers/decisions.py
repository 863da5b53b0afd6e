"""Turning a cycle's decisions into Workload status writes and Events."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kq.controllers.feed import CoreFeed
from kq.controllers.patches import admit_patch, pending_patch, preempt_patch, release_patch
from kq.controllers.writer import WorkloadWriter
from kq.runtime.store import Store
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Pending, Preempt, Victim

Object = dict[str, Any]

# Parallel victim patches, as upstream's preemptor.
PREEMPTION_PARALLELISM = 8


class DecisionWriter:
    """Assumed admissions confirmed or forgotten, pending words, evictions, releases."""

    def __init__(self, feed: CoreFeed, workloads: Store, writer: WorkloadWriter) -> None:
        self._feed = feed
        self._store = workloads
        self._writer = writer
        self._preempting = asyncio.Semaphore(PREEMPTION_PARALLELISM)
        # Pending words written per workload, and from which resourceVersion.
        self._pending_written: dict[str, tuple[str, str, str]] = {}
        self.admissions = 0

    async def apply(self, result: CycleResult) -> None:
        jobs = []
        for decision in result.decisions:
            if isinstance(decision, Admit):
                jobs.append(self._admit(decision))
            elif isinstance(decision, Pending):
                jobs.append(self._pending(decision.key, decision.reason, decision.message))
            else:
                jobs.append(self._preempt(decision))
        await asyncio.gather(*jobs)

    def forget_deleted(self) -> None:
        for key in [k for k in self._pending_written if k not in self._store]:
            del self._pending_written[key]

    def _object(self, key: str) -> Object | None:
        return self._store.get(key)

    async def _admit(self, decision: Admit) -> None:
        key = decision.key
        obj = self._object(key)
        cached = self._feed.cache.workload(key)
        now = time.time()
        patched = (
            None
            if obj is None
            else await self._writer.patch_status(obj, admit_patch(obj, decision, now))
        )
        if obj is None or patched is None:
            # Quota back, and the workload back in its queue from its newest known version.
            self._feed.scheduler.forget(key)
            latest = self._object(key)
            if latest is not None:
                self._feed.refeed(latest)
            return
        self.admissions += 1
        cq = decision.admission.cluster_queue
        waited = now - cached.info.queue_time if cached is not None else 0.0
        self._writer.event(
            patched,
            "QuotaReserved",
            f"Quota reserved in ClusterQueue {cq}, wait time since queued was {waited:.0f}s",
        )
        if not decision.admission_checks:
            self._writer.event(
                patched,
                "Admitted",
                f"Admitted by ClusterQueue {cq}, wait time since reservation was 0s",
            )

    async def _pending(self, key: str, reason: str, message: str) -> None:
        """``QuotaReserved=False`` and a Warning event, only when the words change."""
        obj = self._object(key)
        if obj is None:
            return
        version = obj["metadata"].get("resourceVersion", "")
        if self._pending_written.get(key) == (reason, message, version):
            return  # written from this version; its watch event has not arrived yet
        patch = pending_patch(obj, reason, message, time.time())
        if patch is None:
            return
        patched = await self._writer.patch_status(obj, patch)
        if patched is not None:
            self._pending_written[key] = (reason, message, version)
            self._writer.event(patched, "Pending", message, warning=True)

    async def _preempt(self, decision: Preempt) -> None:
        await asyncio.gather(*(self._evict(v.key, v) for v in decision.victims))
        await self._pending(decision.key, decision.reason, decision.message)

    async def _evict(self, key: str, victim: Victim) -> None:
        obj = self._object(key)
        if obj is None:
            return
        patch = preempt_patch(obj, victim, time.time())
        if patch is None:
            return  # already evicted: the preemptor keeps waiting for the same victim
        async with self._preempting:
            patched = await self._writer.patch_status(obj, patch)
        if patched is not None:
            self._writer.event(patched, "Preempted", victim.message)

    async def release_evicted(self) -> None:
        """Bare Workloads have no job to stop: clear their reservation, as upstream's
        workload controller does for workloads without a job."""
        for key in sorted(self._feed.to_release):
            obj = self._object(key)
            if obj is not None:
                await self._writer.patch_status(obj, release_patch(obj, time.time()))
            # The watch event of the write (or of whatever beat it) decides again.
            self._feed.to_release.discard(key)

    async def write_unqueueable(self) -> None:
        """What Kueue's workload controller says of workloads no cycle will look at."""
        blocked = {**self._feed.unqueueable, **self._feed.inactive_pending()}
        for key, message in blocked.items():
            await self._pending(key, "Inadmissible", message)
