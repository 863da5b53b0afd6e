"""A small in-memory cluster for core tests: objects as API dicts in, decisions out."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from kq.api.clusterqueue import ClusterQueue, parse_cluster_queue
from kq.api.cohort import Cohort, parse_cohort
from kq.api.localqueue import LocalQueue, parse_local_queue
from kq.api.resourceflavor import ResourceFlavor, parse_resource_flavor
from kq.api.workload import Workload, parse_workload
from kq.cache.cache import Cache
from kq.config import PluginsConfig
from kq.plugins import build_plugin_manager
from kq.queue.manager import QueueManager
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Pending, Preempt
from kq.scheduler.plugins import AdmissionPlugins, load_admission_plugins
from kq.scheduler.scheduler import Scheduler

_PLUGINS: AdmissionPlugins | None = None

Quota = int | str | tuple[Any, Any, Any]


def plugins() -> AdmissionPlugins:
    global _PLUGINS
    if _PLUGINS is None:
        _PLUGINS = load_admission_plugins(build_plugin_manager(PluginsConfig()))
    return _PLUGINS


def _resource(name: str, quota: Quota) -> dict[str, Any]:
    if not isinstance(quota, tuple):
        return {"name": name, "nominalQuota": str(quota)}
    nominal, borrowing, lending = quota
    out: dict[str, Any] = {"name": name, "nominalQuota": str(nominal)}
    if borrowing is not None:
        out["borrowingLimit"] = str(borrowing)
    if lending is not None:
        out["lendingLimit"] = str(lending)
    return out


def resource_groups(groups: Sequence[Mapping[str, Mapping[str, Quota]]]) -> list[dict[str, Any]]:
    """``[{flavor: {resource: nominal | (nominal, borrowingLimit, lendingLimit)}}]``."""
    out = []
    for group in groups:
        covered = list(next(iter(group.values())))
        out.append(
            {
                "coveredResources": covered,
                "flavors": [
                    {"name": f, "resources": [_resource(r, q[r]) for r in covered]}
                    for f, q in group.items()
                ],
            }
        )
    return out


class World:
    def __init__(self, requeue_period: float = 0.0) -> None:
        self.cache = Cache()
        self.queues = QueueManager(plugins().strategies, requeue_period=requeue_period)
        self.scheduler = Scheduler(self.cache, self.queues, plugins())
        self.workloads: dict[str, Workload] = {}
        self.clock = itertools.count(1)
        self.finished: set[str] = set()

    def flavor(
        self,
        name: str,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
    ) -> None:
        flavor = parse_resource_flavor(
            {
                "metadata": {"name": name},
                "spec": {"nodeLabels": dict(labels or {}), "nodeTaints": list(taints)},
            }
        )
        assert isinstance(flavor, ResourceFlavor)
        self.cache.set_flavor(flavor)
        self.requeue_all()

    def cluster_queue(
        self,
        name: str,
        groups: Sequence[Mapping[str, Mapping[str, Quota]]],
        cohort: str | None = None,
        annotations: Mapping[str, str] | None = None,
        **spec: Any,
    ) -> ClusterQueue:
        body = {"resourceGroups": resource_groups(groups), "namespaceSelector": {}, **spec}
        if cohort is not None:
            body["cohort"] = cohort
        cq = parse_cluster_queue(
            {"metadata": {"name": name, "annotations": dict(annotations or {})}, "spec": body}
        )
        assert isinstance(cq, ClusterQueue), cq
        self.cache.set_cluster_queue(cq)
        self.queues.set_cluster_queue(name, cq.queueing_strategy)
        self.requeue_all()
        return cq

    def cohort(
        self,
        name: str,
        parent: str | None = None,
        groups: Sequence[Mapping[str, Mapping[str, Quota]]] = (),
    ) -> None:
        spec: dict[str, Any] = {"resourceGroups": resource_groups(groups)}
        if parent is not None:
            spec["parentName"] = parent
        cohort = parse_cohort({"metadata": {"name": name}, "spec": spec})
        assert isinstance(cohort, Cohort), cohort
        self.cache.set_cohort(cohort)

    def local_queue(self, namespace: str, name: str, cq: str) -> None:
        lq = parse_local_queue(
            {"metadata": {"namespace": namespace, "name": name}, "spec": {"clusterQueue": cq}}
        )
        assert isinstance(lq, LocalQueue)
        self.queues.set_local_queue(lq)
        self.scheduler.namespace_labels.setdefault(
            namespace, {"kubernetes.io/metadata.name": namespace}
        )

    def submit(
        self,
        name: str,
        queue: str,
        requests: Mapping[str, str | int] | None = None,
        *,
        namespace: str = "default",
        count: int = 1,
        priority: int = 0,
        tolerations: Sequence[Mapping[str, str]] = (),
        node_selector: Mapping[str, str] | None = None,
        min_count: int | None = None,
        pod_sets: Sequence[Mapping[str, Any]] | None = None,
        annotations: Mapping[str, str] | None = None,
        boost: int = 0,
    ) -> str:
        """``boost``: the priority boost the feed would read from the Workload's annotation."""
        if pod_sets is None:
            pod_sets = [
                self.pod_set("main", requests or {}, count, tolerations, node_selector, min_count)
            ]
        created = next(self.clock)
        obj = {
            "metadata": {
                "namespace": namespace,
                "name": name,
                "uid": f"uid-{created:06d}",
                "creationTimestamp": f"2026-01-01T00:{created // 60 % 60:02d}:{created % 60:02d}Z",
                "annotations": dict(annotations or {}),
            },
            "spec": {"queueName": queue, "priority": priority, "podSets": list(pod_sets)},
        }
        workload = parse_workload(obj)
        assert isinstance(workload, Workload), workload
        if boost:
            workload = replace(workload, priority_boost=boost)
        self.workloads[workload.key] = workload
        assert self.queues.add_workload(workload) is None
        return workload.key

    @staticmethod
    def pod_set(
        name: str,
        requests: Mapping[str, str | int],
        count: int = 1,
        tolerations: Sequence[Mapping[str, str]] = (),
        node_selector: Mapping[str, str] | None = None,
        min_count: int | None = None,
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [
                {"name": "c", "resources": {"requests": {k: str(v) for k, v in requests.items()}}}
            ],
            "tolerations": list(tolerations),
        }
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        out: dict[str, Any] = {"name": name, "count": count, "template": {"spec": spec}}
        if min_count is not None:
            out["minCount"] = min_count
        return out

    def cycle(self) -> CycleResult:
        result = self.scheduler.run_cycle(float(next(self.clock)))
        for decision in result.decisions:
            if isinstance(decision, Admit):
                self.cache.mark_admitted(decision.key)
        return result

    def run(self, cycles: int = 5) -> list[CycleResult]:
        return [self.cycle() for _ in range(cycles)]

    def finish(self, key: str) -> None:
        self.finished.add(key)
        self.scheduler.release(key)

    def complete_eviction(self, key: str) -> None:
        """The victim's job stopped: quota released and the workload pending again."""
        self.scheduler.release(key)
        assert self.queues.add_workload(self.workloads[key]) is None

    def apply(self, path: Path) -> None:
        """Load the kueue.x-k8s.io objects of a manifest file, as the informers would."""
        for obj in yaml.safe_load_all(path.read_text()):
            kind = obj.get("kind") if obj else None
            parsed: object
            if kind == "ResourceFlavor":
                parsed = parse_resource_flavor(obj)
                assert isinstance(parsed, ResourceFlavor), parsed
                self.cache.set_flavor(parsed)
            elif kind == "ClusterQueue":
                parsed = parse_cluster_queue(obj)
                assert isinstance(parsed, ClusterQueue), parsed
                self.cache.set_cluster_queue(parsed)
                self.queues.set_cluster_queue(parsed.name, parsed.queueing_strategy)
            elif kind == "Cohort":
                parsed = parse_cohort(obj)
                assert isinstance(parsed, Cohort), parsed
                self.cache.set_cohort(parsed)
            elif kind == "LocalQueue":
                parsed = parse_local_queue(obj)
                assert isinstance(parsed, LocalQueue), parsed
                self.local_queue(parsed.namespace, parsed.name, parsed.cluster_queue)
        self.requeue_all()

    def requeue_all(self) -> None:
        self.queues.requeue_inadmissible(list(self.queues.queues))

    def admitted(self) -> set[str]:
        return {k for k in self.workloads if self.cache.holds_quota(k)}

    def admission(self, key: str) -> Mapping[str, Any]:
        cached = self.cache.workload(key)
        assert cached is not None
        assert cached.info.obj.admission is not None
        psa = cached.info.obj.admission.pod_set_assignments
        return {p.name: dict(p.flavors) for p in psa}


def pending(result: CycleResult, key: str) -> Pending:
    decision = result.by_key[key]
    assert isinstance(decision, Pending), decision
    return decision


def preempt(result: CycleResult, key: str) -> Preempt:
    decision = result.by_key[key]
    assert isinstance(decision, Preempt), decision
    return decision
