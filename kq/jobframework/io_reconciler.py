"""Reconciling one job key, and turning informer changes into job keys."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog

from kq.api.priority import PRIORITY_CLASS_LABEL
from kq.jobframework import io_composite
from kq.jobframework.admission import FlavorNotFound
from kq.jobframework.interface import ComposableJob, GenericJob
from kq.jobframework.io_apply import ActionApplier
from kq.jobframework.io_facts import Caches, FactSource
from kq.jobframework.objects import (
    Obj,
    controller_owner,
    dig,
    labels,
    meta,
    name,
    namespace,
    uid,
)
from kq.jobframework.reconciler import decide, job_deleted
from kq.runtime.backoff import Backoff
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.events import EventRecorder
from kq.runtime.informer import Informer
from kq.runtime.reconciler import Result
from kq.runtime.resources import Resource
from kq.runtime.store import NAMESPACE_INDEX, OWNER_INDEX, Change, EventType
from kq.runtime.workqueue import WorkQueue

CONTROLLER = "job"
# Lazy: a logger bound at import would keep structlog's defaults, not what kq run configures.
log = structlog.get_logger("kq.jobframework.controller", controller=CONTROLLER)


@dataclass(frozen=True)
class JobKind:
    framework: str
    integration: GenericJob
    resource: Resource
    informer: Informer

    def key(self, ns: str, job_name: str) -> str:
        return f"{self.framework}/{ns}/{job_name}"


class JobReconciler:
    """Reconciles one job key: decide on the cached state, then apply the actions."""

    def __init__(
        self,
        client: KubeClient,
        kinds: Mapping[str, JobKind],
        caches: Caches,
        facts: FactSource,
        recorder: EventRecorder,
        is_leader: Callable[[], bool],
    ) -> None:
        self._client = client
        self._kinds = kinds
        self._caches = caches
        self._facts = facts
        self._recorder = recorder
        self._is_leader = is_leader
        self._retries: dict[str, Backoff] = {}

    async def reconcile(self, key: str) -> Result:
        if not self._is_leader():
            return Result()  # the new leader reconciles every job anyway
        framework, ns, job_name = key.rsplit("/", 2)
        kind = self._kinds[framework]
        bound = log.bind(job=key)
        job, workloads = self._load(kind, ns, job_name)
        if job is None:
            actions = job_deleted(workloads)
        else:
            try:
                actions = decide(kind.integration, job, workloads, self._facts.facts(job))
            except FlavorNotFound as exc:
                delay = self._retry(key, initial=0.5).next()
                bound.info("waiting for ResourceFlavor", error=str(exc), retry_in=round(delay, 2))
                return Result(requeue_after=delay)
        if not actions:  # most passes: spare the applier's copies of the job and its Workloads
            self._retries.pop(key, None)
            return Result()
        applier = ActionApplier(
            self._client, self._recorder, kind.resource, job, workloads, kind.integration
        )
        try:
            await applier.apply(actions)
        except ApiError as exc:
            if not exc.conflict:
                raise
            # Decided on a stale cache (or lost a race): reconcile again on fresh state.
            delay = self._retry(key, initial=0.05).next()
            bound.debug("conflict, retrying", error=str(exc), retry_in=round(delay, 2))
            return Result(requeue_after=delay)
        if actions:
            bound.debug("reconciled", actions=[type(a).__name__ for a in actions])
        self._retries.pop(key, None)
        return Result()

    def _retry(self, key: str, *, initial: float) -> Backoff:
        return self._retries.setdefault(key, Backoff(initial=initial, cap=30.0))

    def _load(self, kind: JobKind, ns: str, job_name: str) -> tuple[Obj | None, list[Obj]]:
        """The job under the key and the Workloads it may control (of a gone job: its orphans)."""
        integration = kind.integration
        if isinstance(integration, ComposableJob):
            loaded = io_composite.load(
                integration, kind.informer.store, self._caches.workloads, ns, job_name
            )
            job, workloads = loaded.job, _ordered(loaded.workloads)
        else:
            job = kind.informer.store.get(f"{ns}/{job_name}")
            workloads = []
            if job is not None:
                workloads = _ordered(self._caches.workloads.by_index(OWNER_INDEX, uid(job)))
        if job is None and not workloads:
            workloads = self._orphans(kind, ns, job_name)
        return job, workloads

    def _orphans(self, kind: JobKind, ns: str, job_name: str) -> list[Obj]:
        """Workloads of a job that is gone: those whose controller owner names it."""
        gvk = kind.integration.GVK
        return [
            wl
            for wl in self._caches.workloads.by_index(NAMESPACE_INDEX, ns)
            if (owner := controller_owner(wl)) is not None
            and (owner.get("apiVersion"), owner.get("kind"), owner.get("name"))
            == (gvk.api_version, gvk.kind, job_name)
        ]


def _ordered(workloads: Sequence[Obj]) -> list[Obj]:
    return sorted(workloads, key=lambda wl: (str(meta(wl).get("creationTimestamp", "")), name(wl)))


class Enqueuer:
    """Informer handlers that turn changes into job keys."""

    def __init__(self, queue: WorkQueue, kinds: Mapping[str, JobKind], caches: Caches) -> None:
        self._queue = queue
        self._kinds = kinds
        self._caches = caches
        self._by_owner = {
            (k.integration.GVK.api_version, k.integration.GVK.kind): k for k in kinds.values()
        }

    def job(self, kind: JobKind) -> Callable[[Change], None]:
        def handler(change: Change) -> None:
            self._add_job(kind, change.obj)

        return handler

    def _add_job(self, kind: JobKind, job: Obj) -> None:
        integration = kind.integration
        if isinstance(integration, ComposableJob):
            self._queue.add(f"{kind.framework}/{io_composite.member_key(integration, job)}")
        else:
            self._queue.add(kind.key(namespace(job), name(job)))

    def workload(self, change: Change) -> None:
        self._owner_of(change.obj)

    def flavor(self, change: Change) -> None:
        """A flavor that appears may unblock jobs waiting for it to start."""
        flavor = name(change.obj)
        for wl in self._caches.workloads.values():
            assignments = dig(wl, "status", "admission", "podSetAssignments") or ()
            if any(flavor in (a.get("flavors") or {}).values() for a in assignments):
                self._owner_of(wl)

    def namespace(self, change: Change) -> None:
        """Its labels decide whether kq manages the jobs in it (managedJobsNamespaceSelector)."""
        if change.type is EventType.DELETED:
            return
        if change.old is not None and labels(change.old) == labels(change.obj):
            return
        ns = name(change.obj)
        for kind in self._kinds.values():
            for job in kind.informer.store.by_index(NAMESPACE_INDEX, ns):
                self._add_job(kind, job)

    def workload_priority_class(self, change: Change) -> None:
        """Jobs naming a WorkloadPriorityClass wait for it to exist and follow its value."""
        if change.type is EventType.DELETED:
            return
        if change.old is not None and change.old.get("value") == change.obj.get("value"):
            return
        wpc = name(change.obj)
        for kind in self._kinds.values():
            for job in kind.informer.store.values():
                if labels(job).get(PRIORITY_CLASS_LABEL) == wpc:
                    self._add_job(kind, job)

    def _owner_of(self, workload: Obj) -> None:
        owner = controller_owner(workload)
        if owner is None:
            self._group_of(workload)
            return
        kind = self._by_owner.get((str(owner.get("apiVersion")), str(owner.get("kind"))))
        if kind is not None:
            self._queue.add(kind.key(namespace(workload), str(owner.get("name", ""))))

    def _group_of(self, workload: Obj) -> None:
        """A pod group's Workload: its pods are owners, none of them its controller."""
        group_key = io_composite.group_key_of_workload(workload)
        kind = self._by_owner.get(("v1", "Pod"))
        if group_key is not None and kind is not None:
            self._queue.add(f"{kind.framework}/{group_key}")

    def everything(self) -> None:
        for kind in self._kinds.values():
            for job in kind.informer.store.values():
                self._add_job(kind, job)
