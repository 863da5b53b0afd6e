"""ClusterQueue and LocalQueue status, patched only when the numbers or condition change."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from kq.api.localqueue import LocalQueue
from kq.controllers.feed import CoreFeed
from kq.controllers.patches import find
from kq.controllers.queue_metrics import QueueGauges
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import CLUSTER_QUEUES, COHORTS, LOCAL_QUEUES, Resource
from kq.runtime.store import Store
from kq.scheduler.status import (
    active_condition,
    cluster_queue_status,
    local_queue_active_condition,
    local_queue_status,
)
from kq.workload.status import rfc3339

log = structlog.get_logger("kq.controllers.queue_status")

Object = dict[str, Any]


def desired_cluster_queue_status(feed: CoreFeed, name: str) -> Object:
    """What ``status`` should say, without transition times."""
    invalid = feed.invalid_cluster_queues.get(name)
    if invalid is not None:
        active = {"type": "Active", "status": "False", "reason": invalid.reason}
        return {"conditions": [{**active, "message": invalid.message}]}
    status = cluster_queue_status(feed.cache, feed.queues, name)
    share = feed.cache.fair_share(name) if feed.fair_sharing else None
    if share is not None:
        status["fairSharing"] = {"weightedShare": share.rounded()}
    ignored = () if feed.fair_sharing else ("spec.fairSharing",)
    return {**status, "conditions": [active_condition(feed.cache, name, ignored)]}


def desired_cohort_status(feed: CoreFeed, name: str) -> Object | None:
    """A Cohort's fair sharing status; kq writes nothing else there, nor anything when off."""
    share = feed.cache.cohort_share(name) if feed.fair_sharing else None
    return None if share is None else {"fairSharing": {"weightedShare": share.rounded()}}


def desired_local_queue_status(feed: CoreFeed, lq: LocalQueue) -> Object:
    status = local_queue_status(feed.cache, feed.queues, lq)
    return {**status, "conditions": [local_queue_active_condition(feed.cache, lq)]}


def _without_times(status: Mapping[str, Any]) -> Object:
    if "conditions" not in status:
        return dict(status)
    conditions = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in status.get("conditions") or ()
    ]
    return {**status, "conditions": conditions}


def _stamped(desired: Object, current: Mapping[str, Any]) -> Object:
    """Transition times: kept while a condition's status stays, now when it flips."""
    now = rfc3339(time.time())
    if "conditions" not in desired:
        return desired
    conditions = []
    for cond in desired["conditions"]:
        old = find(current.get("conditions") or (), cond["type"])
        keep = old is not None and old.get("status") == cond["status"]
        stamp = old.get("lastTransitionTime") if keep and old is not None else now
        conditions.append({**cond, "lastTransitionTime": stamp or now})
    return {**desired, "conditions": conditions}


class QueueStatusWriter:
    """Compares each queue's desired status with its last known one and patches differences."""

    def __init__(
        self,
        client: KubeClient,
        feed: CoreFeed,
        cluster_queues: Store,
        local_queues: Store,
        is_leader: Callable[[], bool],
        cohorts: Store | None = None,
    ) -> None:
        self._client = client
        self._feed = feed
        self._cluster_queues = cluster_queues
        self._local_queues = local_queues
        self._cohorts = cohorts
        self._is_leader = is_leader
        # What we last wrote, so a burst of cycles before the watch catches up writes once.
        self._written: dict[tuple[str, str], Object] = {}
        self._gauges = QueueGauges()
        self.writes = 0

    async def sync(self) -> None:
        self._gauges.refresh(self._feed)
        for obj in self._cluster_queues.values():
            name = obj["metadata"]["name"]
            desired = desired_cluster_queue_status(self._feed, name)
            await self._write(CLUSTER_QUEUES, obj, desired)
        for obj in self._local_queues.values():
            meta = obj["metadata"]
            lq = self._feed.queues.local_queues.get(f"{meta['namespace']}/{meta['name']}")
            if lq is not None:
                await self._write(LOCAL_QUEUES, obj, desired_local_queue_status(self._feed, lq))
        for obj in self._cohorts.values() if self._cohorts is not None else ():
            share = desired_cohort_status(self._feed, obj["metadata"]["name"])
            if share is not None:
                await self._write(COHORTS, obj, share)

    async def _write(self, resource: Resource, obj: Object, desired: Object) -> None:
        meta = obj["metadata"]
        key = (resource.kind, f"{meta.get('namespace', '')}/{meta['name']}")
        current = obj.get("status") or {}
        if resource is COHORTS:  # kq owns only part of a Cohort's status
            current = {k: v for k, v in current.items() if k in desired}
        if _without_times(current) == desired or self._written.get(key) == desired:
            return
        if not self._is_leader():
            return
        self.writes += 1
        try:
            await self._client.merge_patch(
                resource,
                meta["name"],
                {"status": _stamped(desired, current)},
                namespace=meta.get("namespace"),
                subresource="status",
            )
        except ApiError as exc:
            log.info("queue status not written", queue=key[1], error=str(exc))
            return
        self._written[key] = desired
