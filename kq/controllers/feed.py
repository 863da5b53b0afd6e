"""Informer changes into the admission core: cache, queues and the scheduler's inputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from kq.api.admissioncheck import parse_admission_check
from kq.api.clusterqueue import ClusterQueue, parse_cluster_queue
from kq.api.cohort import Cohort, parse_cohort
from kq.api.conditions import is_true
from kq.api.invalid import Invalid
from kq.api.limitrange import Limits, parse_limit_range, summarize
from kq.api.localqueue import LocalQueue, parse_local_queue
from kq.api.priority import (
    PRIORITY_BOOST_ANNOTATION,
    WORKLOAD_PRIORITY_CLASS_SOURCE,
    priority_boost,
)
from kq.api.resourceflavor import ResourceFlavor, parse_resource_flavor
from kq.api.workload import Workload, parse_workload
from kq.cache.cache import Cache
from kq.controllers.patches import needs_release
from kq.controllers.topology_feed import TopologyFeed
from kq.queue.manager import QueueManager
from kq.runtime.store import Change, EventType, object_key
from kq.scheduler.observers import Observers
from kq.scheduler.plugins import AdmissionPlugins
from kq.scheduler.scheduler import Scheduler

log = structlog.get_logger("kq.controllers.feed")

Object = dict[str, Any]
PODS_READY = "PodsReady"


class CoreFeed:
    """Owns the core; every handler is synchronous and ends by calling ``on_change``."""

    def __init__(
        self,
        plugins: AdmissionPlugins,
        workloads: Callable[[], Iterable[Object]],
        on_change: Callable[[], None],
        eviction_timestamp: bool = True,
        observers: Observers | None = None,
    ) -> None:
        """``eviction_timestamp``: a Workload evicted for PodsReady or a check queues by its
        eviction time (waitForPodsReady ``requeuingStrategy.timestamp: Eviction``)."""
        self.cache = Cache()
        self.queues = QueueManager(plugins.strategies, eviction_timestamp, plugins.requeue_period)
        self.not_ready: set[str] = set()
        """Admitted workloads whose pods are not ready yet (waitForPodsReady blockAdmission)."""
        self.scheduler = Scheduler(self.cache, self.queues, plugins, observers)
        self.topology_feed = TopologyFeed(self.cache, self.scheduler, on_change)
        self.invalid_cluster_queues: dict[str, Invalid] = {}
        self.unqueueable: dict[str, str] = {}
        """Pending workloads whose LocalQueue or ClusterQueue is missing, with Kueue's message."""
        self.to_release: set[str] = set()
        self.to_distrust: set[str] = set()
        """Quota holders whose admission kq does not trust (``Scheduler.untrusted``), to evict."""
        self._plugins = plugins
        self.fair_sharing = plugins.fair_sharing is not None
        self._priority_boost = plugins.priority_boost
        self._workloads = workloads
        self._on_change = on_change
        self._workload_classes: dict[str, int] = {}
        self._pod_classes: dict[str, int] = {}
        self._limit_ranges: dict[str, dict[str, Limits]] = {}
        """Per namespace, each LimitRange's container and pod items."""

    # -- specs ---------------------------------------------------------------------------

    def resource_flavor(self, change: Change) -> None:
        name = change.obj["metadata"]["name"]
        parsed = parse_resource_flavor(change.obj)
        if change.type is EventType.DELETED or not isinstance(parsed, ResourceFlavor):
            self.cache.delete_flavor(name)
        else:
            self.cache.set_flavor(parsed)
        self.scheduler.flavors_or_checks_changed()
        self._on_change()

    def admission_check(self, change: Change) -> None:
        name = change.obj["metadata"]["name"]
        if change.type is EventType.DELETED:
            self.cache.delete_admission_check(name)
        else:
            parsed = parse_admission_check(change.obj)
            if self.cache.checks.get(name) == parsed:
                return  # a status write that left Active as it was
            self.cache.set_admission_check(parsed)
        self.scheduler.flavors_or_checks_changed()
        self._on_change()

    def cluster_queue(self, change: Change) -> None:
        name = change.obj["metadata"]["name"]
        parsed = self._parse_cluster_queue(change.obj)
        if change.type is EventType.MODIFIED and self._unchanged_cluster_queue(name, parsed):
            return  # a status write (ours, mostly): nothing the core reads has moved
        self.invalid_cluster_queues.pop(name, None)
        if change.type is EventType.DELETED or not isinstance(parsed, ClusterQueue):
            if isinstance(parsed, Invalid) and change.type is not EventType.DELETED:
                self.invalid_cluster_queues[name] = parsed
            self.scheduler.cluster_queue_changed(name)
            self.cache.delete_cluster_queue(name)
            self.queues.delete_cluster_queue(name)
        else:
            self.cache.set_cluster_queue(parsed)
            order = self._plugins.order_for(parsed)
            self.queues.set_cluster_queue(name, parsed.queueing_strategy, order)
            self.scheduler.cluster_queue_changed(name)
        self._refeed_pending()
        self._on_change()

    def _unchanged_cluster_queue(self, name: str, parsed: ClusterQueue | Invalid) -> bool:
        if isinstance(parsed, Invalid):
            return self.invalid_cluster_queues.get(name) == parsed
        return self.cache.cluster_queues.get(name) == parsed

    def _parse_cluster_queue(self, obj: Object) -> ClusterQueue | Invalid:
        """Parsed, with a strategy no plugin provides made invalid rather than fatal."""
        parsed = parse_cluster_queue(obj)
        if not isinstance(parsed, ClusterQueue):
            return parsed
        unknown = self._plugins.unknown(parsed)
        if unknown is not None:
            return Invalid("ClusterQueue", parsed.name, "UnknownPlugin", unknown)
        return parsed

    def cohort(self, change: Change) -> None:
        name = change.obj["metadata"]["name"]
        parsed = parse_cohort(change.obj)
        if change.type is EventType.DELETED or not isinstance(parsed, Cohort):
            self.cache.delete_cohort(name)
        else:
            self.cache.set_cohort(parsed)
        # A removed cohort's queues are no longer reachable by name: wake every queue.
        self.scheduler.flavors_or_checks_changed()
        self._on_change()

    def local_queue(self, change: Change) -> None:
        parsed = parse_local_queue(change.obj)
        key = object_key(change.obj)
        if change.type is EventType.MODIFIED and self.queues.local_queues.get(key) == parsed:
            return  # a status write: the mapping to its ClusterQueue is the same
        if change.type is EventType.DELETED or not isinstance(parsed, LocalQueue):
            self.queues.delete_local_queue(object_key(change.obj))
        else:
            self.queues.set_local_queue(parsed)
        self._refeed_pending()
        self._on_change()

    def namespace(self, change: Change) -> None:
        meta = change.obj["metadata"]
        if change.type is EventType.DELETED:
            self.scheduler.namespace_labels.pop(meta["name"], None)
        else:
            self.scheduler.namespace_labels[meta["name"]] = dict(meta.get("labels") or {})
        self.scheduler.flavors_or_checks_changed()
        self._on_change()

    def limit_range(self, change: Change) -> None:
        meta = change.obj["metadata"]
        ns, name = str(meta.get("namespace", "")), meta["name"]
        ranges = self._limit_ranges.setdefault(ns, {})
        if change.type is EventType.DELETED:
            ranges.pop(name, None)
        else:
            ranges[name] = parse_limit_range(change.obj)
        # Kueue lists them in no set order; by name, "the first default" is at least stable.
        summary = summarize(ranges[n] for n in sorted(ranges))
        if not ranges:
            del self._limit_ranges[ns]
        if summary == self.scheduler.limit_ranges.get(ns):
            return
        if summary is None:
            del self.scheduler.limit_ranges[ns]
        else:
            self.scheduler.limit_ranges[ns] = summary
        # The namespace's pending workloads are counted and checked again with the new bounds.
        for obj in self._workloads():
            if obj["metadata"].get("namespace") == ns and not _holds_quota(obj):
                self._workload(obj)
        self._on_change()

    def workload_priority_class(self, change: Change) -> None:
        self._priority_class(self._workload_classes, change)

    def priority_class(self, change: Change) -> None:
        self._priority_class(self._pod_classes, change)

    def _priority_class(self, classes: dict[str, int], change: Change) -> None:
        name = change.obj["metadata"]["name"]
        value = change.obj.get("value")
        if change.type is EventType.DELETED or not isinstance(value, int):
            classes.pop(name, None)
        else:
            classes[name] = value
        for obj in self._workloads():
            spec = obj.get("spec") or {}
            if spec.get("priorityClassName") == name and spec.get("priority") is None:
                self._workload(obj)
        self._on_change()

    # -- workloads -----------------------------------------------------------------------

    def workload(self, change: Change) -> None:
        key = object_key(change.obj)
        if change.type is EventType.DELETED:
            self.unqueueable.pop(key, None)
            self.to_release.discard(key)
            self.to_distrust.discard(key)
            self.not_ready.discard(key)
            self.scheduler.workload_deleted(key)
        else:
            self._workload(change.obj)
        self._on_change()

    def inactive_pending(self) -> dict[str, str]:
        """Pending workloads of inactive ClusterQueues (no cycle sees them), with Kueue's words."""
        out = {}
        for name, queue in self.queues.queues.items():
            if self.cache.inactive_reason(name) is not None:
                for info in queue.unordered():
                    out[info.key] = f"ClusterQueue {name} is inactive"
        return out

    def refeed(self, obj: Object) -> None:
        """Route a stored workload again (its admission write failed)."""
        self._workload(obj)
        self._on_change()

    def changed(self) -> None:
        """Something outside the informers' events (a failed write) needs another cycle."""
        self._on_change()

    def _workload(self, obj: Object) -> None:
        key = object_key(obj)
        parsed = parse_workload(obj)
        if isinstance(parsed, Invalid):
            log.warning("workload ignored", workload=key, message=parsed.message)
            return
        if parsed.is_admitted and not is_true(parsed.conditions, PODS_READY):
            self.not_ready.add(key)
        else:
            self.not_ready.discard(key)
        why = self.scheduler.workload_changed(self._with_priority(parsed, obj))
        if why is None:
            self.unqueueable.pop(key, None)
        else:
            self.unqueueable[key] = why
        if needs_release(obj):
            self.to_release.add(key)
        else:
            self.to_release.discard(key)
        if key in self.scheduler.untrusted:
            self.to_distrust.add(key)
        else:
            self.to_distrust.discard(key)

    def _with_priority(self, workload: Workload, obj: Object) -> Workload:
        """A Workload naming a class but no value takes the class's value, as its webhook; and
        its priority boost, when honoured."""
        annotations = (obj.get("metadata") or {}).get("annotations")
        if annotations and PRIORITY_BOOST_ANNOTATION in annotations:
            boost = priority_boost(annotations, self._priority_boost)
            if boost:
                workload = dataclasses.replace(workload, priority_boost=boost)
        spec = obj.get("spec") or {}
        name = spec.get("priorityClassName")
        if not name or spec.get("priority") is not None:
            return workload
        if spec.get("priorityClassSource") == WORKLOAD_PRIORITY_CLASS_SOURCE:
            value = self._workload_classes.get(name)
        else:
            value = self._pod_classes.get(name)
        return workload if value is None else dataclasses.replace(workload, priority=value)

    def _refeed_pending(self) -> None:
        """Queues appeared or vanished: route every workload without quota again, and judge
        again the admissions not trusted (their queue may just have arrived)."""
        untrusted = self.scheduler.untrusted
        for obj in self._workloads():
            if not _holds_quota(obj) or (untrusted and object_key(obj) in untrusted):
                self._workload(obj)


def _holds_quota(obj: Object) -> bool:
    return (obj.get("status") or {}).get("admission") is not None
