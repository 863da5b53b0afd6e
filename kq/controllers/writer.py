"""Workload status writes and their Events, only while this process leads."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import structlog

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.events import DROPS, NORMAL, WARNING, EventRecorder
from kq.runtime.resources import WORKLOADS

log = structlog.get_logger("kq.controllers.writer")

# Events waiting for the server before new ones are dropped (and counted), as client-go's
# broadcaster drops when its 1000-deep queue is full: under a client limiter they must not
# pile up. Repeats of an Event being written leave the queue at once (the recorder's series).
MAX_QUEUED_EVENTS = 1000
TRACE_ID = "kq.dev/trace-id"
"""Annotation on a decision's Events: the trace id of the cycle that decided."""

Object = dict[str, Any]


class WorkloadWriter:
    """Merge patches on ``workloads/status`` guarded by the object's resourceVersion.

    The guard turns a decision made on a stale view into a 409 instead of overwriting a write
    we have not seen yet (a job finishing, a user's edit); the informer then brings the newer
    object and the next cycle decides again.
    """

    def __init__(
        self, client: KubeClient, recorder: EventRecorder, is_leader: Callable[[], bool]
    ) -> None:
        self._client = client
        self._recorder = recorder
        self._is_leader = is_leader
        self.writes = 0
        self.refused: Counter[int] = Counter()
        """Writes the server refused, by HTTP status (0: no answer)."""
        self.dropped_events = 0
        self._events: set[asyncio.Task[None]] = set()

    async def patch_status(self, obj: Object, patch: Object) -> Object | None:
        """The updated object, or None when not leading or the server refused."""
        if not self._is_leader():
            return None
        meta = obj["metadata"]
        self.writes += 1
        try:
            return await self._client.merge_patch(
                WORKLOADS,
                meta["name"],
                patch,
                namespace=meta.get("namespace"),
                resource_version=meta.get("resourceVersion"),
                subresource="status",
            )
        except ApiError as exc:
            self.refused[exc.status] += 1
            log.info("workload status not written", workload=meta["name"], error=str(exc))
            return None

    def event(
        self, obj: Object, reason: str, message: str, warning: bool = False, trace_id: str = ""
    ) -> None:
        """Posted in the background: an Event must not hold up the next admission.
        ``trace_id``: the deciding cycle's trace, annotated on the Event (``TRACE_ID``)."""
        if not self._is_leader():
            return
        if len(self._events) >= MAX_QUEUED_EVENTS:
            self.dropped_events += 1
            DROPS.add("queue_full")
            return
        kind = WARNING if warning else NORMAL
        annotations = {TRACE_ID: trace_id} if trace_id else None
        task = asyncio.create_task(self._recorder.record(obj, kind, reason, message, annotations))
        self._events.add(task)
        task.add_done_callback(self._events.discard)

    async def close(self) -> None:
        """Drop Events still in flight (the process is stopping or lost leadership)."""
        for task in self._events:
            task.cancel()
        await asyncio.gather(*self._events, return_exceptions=True)
