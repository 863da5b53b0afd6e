"""The workload controller: admission checks, deactivation and back-off, written to the API.

Standalone (its own informers) or on ``kq run``'s manager (shared ones)::

    WorkloadLifecycle(client, informers, recorder).run()

A Workload is looked at only when something in it is this controller's business (admission
check states, a ClusterQueue with checks, ``spec.active=false``, a back-off): clusters
without checks or deactivations pay one dictionary look-up per Workload event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import structlog

from kq.api.clusterqueue import ClusterQueue, parse_cluster_queue
from kq.config import KqConfig, WaitForPodsReady
from kq.controllers import metrics
from kq.controllers.lifecycle import JOB_UID_LABEL, next_step
from kq.controllers.steps import Facts, Wait, Write
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.events import NORMAL, WARNING, EventRecorder
from kq.runtime.informer import Informer
from kq.runtime.manager import Manager
from kq.runtime.reconciler import Controller, Result
from kq.runtime.resources import CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS, Resource
from kq.runtime.store import Change, EventType, object_key

log = structlog.get_logger("kq.controllers.workloads")

Object = dict[str, Any]
WATCHED = (CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS)
NAME = "workload-lifecycle"


class WorkloadLifecycle:
    """Reconciles Workload keys with ``next_step`` until each has nothing left to do."""

    def __init__(
        self,
        client: KubeClient,
        informers: Mapping[Resource, Informer],
        recorder: EventRecorder,
        workers: int = 4,
        pods_ready: WaitForPodsReady | None = None,
    ) -> None:
        """``pods_ready``: the waitForPodsReady configuration, when enabled."""
        self._client = client
        self._pods_ready = pods_ready
        self._recorder = recorder
        self._informers = informers
        self._workloads = informers[WORKLOADS].store
        self._local_queues = informers[LOCAL_QUEUES].store
        # ClusterQueues with admission checks, parsed: the others need no look.
        self._with_checks: dict[str, ClusterQueue] = {}
        # stopPolicy of stopped ClusterQueues (by name) and LocalQueues (namespace/name).
        self._stopped: dict[str, str] = {}
        self.controller = Controller(NAME, self, workers=workers)
        informers[CLUSTER_QUEUES].add_handler(self._cluster_queue)
        informers[LOCAL_QUEUES].add_handler(self._local_queue)
        informers[WORKLOADS].add_handler(self._workload)

    async def run(self) -> None:
        await asyncio.gather(*(i.wait_synced() for i in self._informers.values()))
        try:
            await self.controller.run()
        finally:
            self.controller.queue.shut_down()

    def _cluster_queue(self, change: Change) -> None:
        name = change.obj["metadata"]["name"]
        parsed = parse_cluster_queue(change.obj)
        old = self._with_checks.pop(name, None)
        live = change.type is not EventType.DELETED and isinstance(parsed, ClusterQueue)
        if live and isinstance(parsed, ClusterQueue) and parsed.admission_checks:
            self._with_checks[name] = parsed
        new = self._with_checks.get(name)
        checks_moved = (old and (old.admission_checks, old.check_flavors)) != (
            new and (new.admission_checks, new.check_flavors)
        )
        if self._stop_moved(name, change) or checks_moved:
            for obj in self._workloads.values():
                if self._cluster_queue_of(obj) == name:
                    self.controller.queue.add(object_key(obj))

    def _local_queue(self, change: Change) -> None:
        key = object_key(change.obj)
        if self._stop_moved(key, change):
            namespace, name = key.split("/", 1)
            for obj in self._workloads.values():
                meta, spec = obj["metadata"], obj.get("spec") or {}
                if meta.get("namespace") == namespace and spec.get("queueName") == name:
                    self.controller.queue.add(object_key(obj))

    def _stop_moved(self, key: str, change: Change) -> bool:
        """Record a queue's ``stopPolicy``; whether it changed."""
        policy = "None"
        if change.type is not EventType.DELETED:
            policy = str((change.obj.get("spec") or {}).get("stopPolicy") or "None")
        old = self._stopped.pop(key, "None")
        if policy != "None":
            self._stopped[key] = policy
        return old != policy

    def _cluster_queue_of(self, obj: Object) -> str | None:
        name = _admission(obj).get("clusterQueue")
        if name is not None:
            return str(name)
        meta = obj["metadata"]
        lq = self._local_queues.get(
            f"{meta.get('namespace')}/{(obj.get('spec') or {}).get('queueName')}"
        )
        return None if lq is None else (lq.get("spec") or {}).get("clusterQueue")

    def _workload(self, change: Change) -> None:
        if change.type is not EventType.DELETED and self._concerns(change.obj):
            self.controller.queue.add(object_key(change.obj))

    def _concerns(self, obj: Object) -> bool:
        status, spec, meta = obj.get("status") or {}, obj.get("spec") or {}, obj["metadata"]
        if not meta.get("ownerReferences") and (
            meta.get("deletionTimestamp") or (meta.get("labels") or {}).get(JOB_UID_LABEL)
        ):
            return True  # orphaned
        if status.get("admissionChecks") or status.get("requeueState"):
            return True
        if spec.get("active") is False:
            return True
        admission = _admission(obj)
        if admission.get("clusterQueue") in self._with_checks:
            return True
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
        if "DeactivationTarget" in conditions or conditions.get("Requeued") == "False":
            return True
        if conditions.get("Admitted") != "True":
            return False
        if self._pods_ready is not None and conditions.get("PodsReady") != "True":
            return True
        lq = f"{obj['metadata'].get('namespace')}/{spec.get('queueName')}"
        return (
            spec.get("maximumExecutionTimeSeconds") is not None
            or admission.get("clusterQueue") in self._stopped
            or lq in self._stopped
        )

    def _facts(self, obj: Object) -> Facts:
        cq = self._cluster_queue_of(obj)
        lq = f"{obj['metadata'].get('namespace')}/{(obj.get('spec') or {}).get('queueName')}"
        return Facts(
            required=self._required(obj),
            pods_ready=self._pods_ready,
            cluster_queue_stop=self._stopped.get(cq or "", "None"),
            local_queue_stop=self._stopped.get(lq, "None"),
        )

    def _required(self, obj: Object) -> tuple[str, ...] | None:
        admission = _admission(obj)
        cq_name = admission.get("clusterQueue")
        if cq_name is None:
            return None
        cq = self._with_checks.get(cq_name)
        if cq is None:
            known = self._informers[CLUSTER_QUEUES].store.get(cq_name) is not None
            return () if known else None
        flavors = (
            f for psa in admission.get("podSetAssignments") or () for f in psa["flavors"].values()
        )
        return cq.checks_for(flavors)

    async def reconcile(self, key: str) -> Result:
        obj = self._workloads.get(key)
        if obj is None:
            return Result()
        step = next_step(obj, self._facts(obj), time.time())
        if isinstance(step, Wait):
            return Result(requeue_after=step.seconds)
        if isinstance(step, Write):
            await self._write(obj, step)
        return Result()

    async def _write(self, obj: Object, step: Write) -> None:
        meta = obj["metadata"]
        try:
            written = await self._client.merge_patch(
                WORKLOADS,
                meta["name"],
                step.patch,
                namespace=meta.get("namespace"),
                resource_version=meta.get("resourceVersion"),
                subresource="status" if step.status else "",
            )
        except ApiError as exc:
            if exc.status in (404, 409):
                return  # gone, or changed: its watch event brings the next look
            raise
        for event in step.events:
            kind = WARNING if event.warning else NORMAL
            await self._recorder.record(written, kind, event.reason, event.message)
        _count(written, step)


def _admission(obj: Object) -> Mapping[str, Any]:
    return (obj.get("status") or {}).get("admission") or {}


def _count(obj: Object, step: Write) -> None:
    cq = str(_admission(obj).get("clusterQueue", ""))
    if step.admitted_after is not None:
        cohorts = metrics.ANCESTRY.of(cq)
        metrics.admitted_after_checks(obj, cq, step.admitted_after, cohorts)
    if step.evicted is not None:
        # Kueue's reason label is the eviction's reason without its underlying cause.
        metrics.EVICTIONS.evicted(obj, cq, *metrics.split_reason(step.evicted))


WORKLOAD_GROUP_KIND = "Workload.kueue.x-k8s.io"


def register_workload_lifecycle(manager: Manager, config: KqConfig) -> WorkloadLifecycle:
    """Share the manager's informers; the controller writes only while this replica leads."""
    informers = {resource: manager.informer(resource) for resource in WATCHED}
    recorder = EventRecorder(manager.leader_client, "kq-workload", config.namespace)
    pods_ready = config.wait_for_pods_ready
    lifecycle = WorkloadLifecycle(
        manager.leader_client,
        informers,
        recorder,
        workers=config.workers(WORKLOAD_GROUP_KIND),
        pods_ready=pods_ready if pods_ready.enable else None,
    )
    manager.add(NAME, lifecycle.run, leader_only=True)
    return lifecycle
