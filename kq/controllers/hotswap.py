"""Hot-swap: admitted workloads with pods placed on failed nodes are re-placed by their
ClusterQueue's hot-swap policy, its victims evicted through the normal preemption path.

Runs in the admission loop, between cycles, so the quota and node view it plans on is the one
the cycles use. A recovery is written in this order: victims evicted, the workload's new
topology assignment, then its pods on the failed nodes failed so its job restarts at once
(kube's taint manager would wait 300 s). The restarted pods are pinned by ``TopologyPods``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import structlog

from kq.api.conditions import is_true
from kq.api.topology import TopologyAssignment
from kq.api.workload import EVICTED, Admission
from kq.cache.cache import Cache
from kq.cache.snapshot import Snapshot
from kq.cache.topology import is_exclusive, placements_of
from kq.controllers.patches import preempt_patch
from kq.controllers.pods import TopologyPods
from kq.controllers.writer import WorkloadWriter
from kq.runtime.store import Store
from kq.scheduler.plugins import AdmissionPlugins
from kq.scheduler.protocols import Recovery, Target
from kq.scheduler.victims import victim
from kq.workload.info import WorkloadInfo
from kq.workload.status import admission_dict

log = structlog.get_logger("kq.controllers.hotswap")

Object = dict[str, Any]
NO_CAPACITY = "HotSwapNoCapacity"


class HotSwap:
    def __init__(
        self,
        cache: Cache,
        plugins: AdmissionPlugins,
        workloads: Store,
        writer: WorkloadWriter,
        pods: TopologyPods,
    ) -> None:
        self._cache = cache
        self._plugins = plugins
        self._workloads = workloads
        self._writer = writer
        self._pods = pods
        self._in_flight: set[str] = set()
        self._said: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def failed_nodes(self) -> frozenset[str]:
        """Nodes holding kq-placed pods that are failed or gone."""
        nodes = self._cache.nodes
        return frozenset(
            name
            for name in self._cache.placements.by_node
            if name not in nodes or nodes[name].failed
        )

    def run(self) -> None:
        """Plan a recovery for every workload hit by a failed node, highest priority first."""
        failed = self.failed_nodes()
        if not failed:
            self._said.clear()
            return
        hit = {k for n in failed for k in self._cache.placements.by_node.get(n, {})}
        infos = [
            cached.info
            for key in hit - self._in_flight
            if (cached := self._cache.workload(key)) is not None and not cached.assumed
        ]
        if not infos:
            return
        snapshot = self._cache.snapshot()
        for info in sorted(infos, key=lambda i: (-i.priority, i.queue_time, i.key)):
            self._recover(snapshot, info, failed)

    def _recover(self, snapshot: Snapshot, info: WorkloadInfo, failed: frozenset[str]) -> None:
        obj = self._workloads.get(info.key)
        cq = self._cache.cluster_queues.get(info.cluster_queue)
        if obj is None or cq is None or is_true(info.obj.conditions, EVICTED):
            return
        policy = self._plugins.hot_swap_for(cq)
        result = None if policy is None else policy.recover(snapshot, info, failed)
        if isinstance(result, str):
            if self._said.get(info.key) != result:
                self._said[info.key] = result
                self._writer.event(obj, NO_CAPACITY, result, warning=True)
            return
        if result is None:
            return
        self._said.pop(info.key, None)
        for target in result.victims:
            snapshot.topology.unplace(target.workload.key)
        # Where it will be, its unmoved pod sets too; assumed at once, as an admission is: a
        # victim released before the move is written must not be placed back on its domains.
        after = WorkloadInfo(replace(info.obj, admission=_moved(info, result.topology)))
        moved = placements_of(after)
        snapshot.topology.unplace(info.key)
        snapshot.topology.place(info.key, moved, is_exclusive(info))
        self._cache.placements.add(info.key, moved, is_exclusive(info))
        self._in_flight.add(info.key)
        task = asyncio.create_task(self._apply(snapshot, info, obj, result, failed))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _apply(
        self,
        snapshot: Snapshot,
        info: WorkloadInfo,
        obj: Object,
        recovery: Recovery,
        failed: frozenset[str],
    ) -> None:
        moved = False
        try:
            now = time.time()
            for target in recovery.victims:
                if not await self._evict(snapshot, info, target.workload.key, target, now):
                    # Moving onto a victim's domains that it still holds would double-book
                    # them; the victim's newer version wakes the next plan.
                    log.info("hot-swap deferred", workload=info.key, victim=target.workload.key)
                    return
            admission = _moved(info, recovery.topology)
            patched = await self._writer.patch_status(
                obj, {"status": {"admission": admission_dict(admission)}}
            )
            if patched is None:
                return
            moved = True
            message = _message(info, recovery, failed)
            self._writer.event(patched, "HotSwap", message)
            log.info("hot-swap", workload=info.key, message=message)
            self._pods.fail_on(info.key, failed, f"kq hot-swap: {message}")
        finally:
            self._in_flight.discard(info.key)
            cached = self._cache.workload(info.key)
            if not moved and cached is not None:  # what the cache knows again
                self._cache.placements.add(
                    info.key, placements_of(cached.info), is_exclusive(cached.info)
                )

    async def _evict(
        self, snapshot: Snapshot, info: WorkloadInfo, key: str, target: Target, now: float
    ) -> bool:
        """Whether the victim is evicted (now, or already); gone counts as evicted."""
        obj = self._workloads.get(key)
        if obj is None:
            return True
        words = victim(snapshot, info, target)
        patch = preempt_patch(obj, words, now)
        if patch is None:
            return True
        patched = await self._writer.patch_status(obj, patch)
        if patched is None:
            return False
        self._writer.event(patched, "Preempted", words.message)
        return True

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _moved(info: WorkloadInfo, topology: Mapping[str, TopologyAssignment]) -> Admission:
    admission = info.obj.admission
    assert admission is not None
    return replace(
        admission,
        pod_set_assignments=tuple(
            replace(psa, topology=topology.get(psa.name, psa.topology))
            for psa in admission.pod_set_assignments
        ),
    )


def _message(info: WorkloadInfo, recovery: Recovery, failed: frozenset[str]) -> str:
    nodes = ", ".join(sorted(failed)[:4]) + (", ..." if len(failed) > 4 else "")
    domains = sorted(
        {values[0] for a in recovery.topology.values() for values, _ in a.domains if values}
    )
    message = f"re-placed after the failure of node(s) {nodes}; now on {', '.join(domains)}"
    if recovery.victims:
        evicted = ", ".join(t.workload.key for t in recovery.victims)
        message += f"; evicted to make room: {evicted}"
    return message
