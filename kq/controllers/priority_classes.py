"""The WorkloadPriorityClass controller: a class's value reaches every Workload that names it.

As Kueue's: each Workload whose ``priorityClassSource`` is a WorkloadPriorityClass and whose
``priorityClassName`` is the class gets ``spec.priority`` set to the class's value, whatever
its state (pending, admitted or finished) and whether or not a job owns it. A class is looked
at when it appears (a class deleted and created again with another value) and when its value
changes; a deleted class leaves its Workloads' priorities as they are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import structlog

from kq.api.priority import WORKLOAD_PRIORITY_CLASS_SOURCE
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.informer import Informer
from kq.runtime.manager import Manager
from kq.runtime.reconciler import Controller, Result
from kq.runtime.resources import WORKLOAD_PRIORITY_CLASSES, WORKLOADS, Resource
from kq.runtime.store import Change, EventType, object_key

log = structlog.get_logger("kq.controllers.priority_classes")

Object = dict[str, Any]
WATCHED = (WORKLOAD_PRIORITY_CLASSES, WORKLOADS)
NAME = "workloadpriorityclass"


class PriorityClassController:
    """Reconciles WorkloadPriorityClass names: their Workloads' ``spec.priority`` follows."""

    def __init__(self, client: KubeClient, informers: Mapping[Resource, Informer]) -> None:
        self._client = client
        self._informers = informers
        self._classes = informers[WORKLOAD_PRIORITY_CLASSES].store
        self._workloads = informers[WORKLOADS].store
        self.controller = Controller(NAME, self)
        informers[WORKLOAD_PRIORITY_CLASSES].add_handler(self._class_changed)

    async def run(self) -> None:
        """Until cancelled. Every class is looked at again when a term starts: the previous
        leader may have stopped before it was done."""
        await asyncio.gather(*(i.wait_synced() for i in self._informers.values()))
        for wpc in self._classes.values():
            self.controller.queue.add(object_key(wpc))
        await self.controller.run()

    def _class_changed(self, change: Change) -> None:
        if change.type is EventType.DELETED:
            return
        old = change.old
        if old is not None and old.get("value") == change.obj.get("value"):
            return  # metadata or description only
        self.controller.queue.add(object_key(change.obj))

    async def reconcile(self, key: str) -> Result:
        wpc = self._classes.get(key)
        value = None if wpc is None else wpc.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            return Result()
        failed: ApiError | None = None
        for workload in self._workloads.values():
            spec = workload.get("spec") or {}
            if not _names(spec, key) or spec.get("priority") == value:
                continue
            try:
                await self._set_priority(workload, value)
            except ApiError as exc:
                # The others still get their value; a stale one (409) is retried with the
                # class, after the informer has caught up.
                if not exc.not_found:
                    failed = exc
        if failed is not None:
            raise failed
        return Result()

    async def _set_priority(self, workload: Object, value: int) -> None:
        meta = workload["metadata"]
        await self._client.merge_patch(
            WORKLOADS,
            meta["name"],
            {"spec": {"priority": value}},
            namespace=meta.get("namespace"),
            resource_version=meta.get("resourceVersion"),
        )
        log.info("updated workload priority", workload=object_key(workload), priority=value)


def _names(spec: Mapping[str, Any], wpc: str) -> bool:
    return (
        spec.get("priorityClassSource") == WORKLOAD_PRIORITY_CLASS_SOURCE
        and spec.get("priorityClassName") == wpc
    )


def register_priority_classes(manager: Manager) -> PriorityClassController:
    """Share the manager's informers; the controller writes only while this replica leads."""
    informers = {resource: manager.informer(resource) for resource in WATCHED}
    controller = PriorityClassController(manager.leader_client, informers)
    manager.add(NAME, controller.run, leader_only=True)
    return controller
