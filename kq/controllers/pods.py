"""Pods kq places itself: each waits behind the ``kueue.x-k8s.io/topology`` gate until kq pins
it to a node of its slice's domain, and a pod on a failed node is failed at once on hot-swap.

Which node: the pod's slice is its sub-group index label (JobSet's child Job index), else its
completion index divided by the slice size; within the slice, the first assigned node with
fewer live pinned pods than its count. Counting live pods (not remembering pins) keeps it right
across restarts, when a job's pods are recreated and pinned again by a new assignment.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from kq.api.topology import HOSTNAME, TOPOLOGY_GATE, WORKLOAD_ANNOTATION
from kq.api.workload import Workload, parse_workload
from kq.controllers import metrics
from kq.jobframework.constants import POD_SET_LABEL
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.informer import Informer
from kq.runtime.resources import PODS
from kq.runtime.store import Change, EventType, Store
from kq.scheduler.placement import Slices, slices_of
from kq.workload.status import rfc3339

log = structlog.get_logger("kq.controllers.pods")

Object = dict[str, Any]
TAS_SELECTOR = "kueue.x-k8s.io/tas=true"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
BY_WORKLOAD = "kq-workload"


GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"


def workload_of(pod: Mapping[str, Any]) -> str | None:
    meta = pod.get("metadata") or {}
    name = (meta.get("annotations") or {}).get(WORKLOAD_ANNOTATION)
    return f"{meta.get('namespace')}/{name}" if name else None


def gated(pod: Mapping[str, Any]) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or ()
    return any(g.get("name") == TOPOLOGY_GATE for g in gates)


def live(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


@dataclass(frozen=True, slots=True)
class _PodSetPlan:
    """A pod set's topology assignment cut into slices, and how a pod finds its slice."""

    name: str
    size: int
    slices: Slices
    sub_group: str | None

    def index_of(self, pod: Mapping[str, Any]) -> int | None:
        """The pod's slice: its sub-group label, else its completion index over the size."""
        labels = pod["metadata"].get("labels") or {}
        annotations = pod["metadata"].get("annotations") or {}
        try:
            if self.sub_group and self.sub_group in labels:
                return int(labels[self.sub_group])
            index = labels.get(COMPLETION_INDEX) or annotations.get(COMPLETION_INDEX)
            return int(index) // self.size if index is not None else 0
        except ValueError:
            return None


def _plan(pod: Mapping[str, Any], workload: Workload) -> _PodSetPlan | None:
    name = (pod["metadata"].get("labels") or {}).get(POD_SET_LABEL)
    assignments = workload.admission.pod_set_assignments if workload.admission else ()
    psa = next((p for p in assignments if p.name == name), None)
    if name is None or psa is None or psa.topology is None:
        return None
    spec = next((ps for ps in workload.pod_sets if ps.name == name), None)
    request = spec.topology if spec is not None else None
    size = (min(request.slice_size, psa.count) if request else psa.count) or 1
    sub_group = request.sub_group_label if request else None
    return _PodSetPlan(name, size, slices_of(psa.topology, size), sub_group)


def _pinned_node(pod: Mapping[str, Any], pod_set: str) -> str | None:
    """The node a live, ungated pod of ``pod_set`` is pinned to."""
    node = ((pod.get("spec") or {}).get("nodeSelector") or {}).get(HOSTNAME)
    labels = pod["metadata"].get("labels") or {}
    if not node or not live(pod) or gated(pod) or labels.get(POD_SET_LABEL) != pod_set:
        return None
    return str(node)


def choose_node(
    pod: Mapping[str, Any], workload: Workload, siblings: Iterable[Mapping[str, Any]]
) -> str | None:
    """The node to pin ``pod`` to, or ``None`` while its slice's nodes are all taken."""
    plan = _plan(pod, workload)
    index = plan.index_of(pod) if plan is not None else None
    if plan is None or index is None or not 0 <= index < len(plan.slices):
        return None
    taken: dict[str, int] = {}
    for other in siblings:
        node = _pinned_node(other, plan.name)
        if node is not None and plan.index_of(other) == index:
            taken[node] = taken.get(node, 0) + 1
    for _, node, count in plan.slices[index]:
        if taken.get(node, 0) < count:
            return node
    return None


class TopologyPods:
    """The informer of kq-placed pods, the pinning of gated ones, and hot-swap's pod failures."""

    def __init__(self, client: KubeClient, workloads: Store, is_leader: Callable[[], bool]) -> None:
        self._client = client
        self._workloads = workloads
        self._is_leader = is_leader
        self.informer = Informer(client, PODS, label_selector=TAS_SELECTOR)
        self.informer.store.add_index(BY_WORKLOAD, lambda p: [k] if (k := workload_of(p)) else [])
        self.informer.add_handler(self._pod)
        self._pinning: dict[str, str] = {}
        """Pod key → the node a pin in flight gives it: counted until the informer shows it."""
        self._waiting: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def _pod(self, change: Change) -> None:
        key = _key(change.obj)
        if change.type is EventType.DELETED or not gated(change.obj):
            self._pinning.pop(key, None)
            if self._waiting:
                self.retry()  # a pinned pod left: a waiting one may take its node
            return
        self._pin_soon(change.obj)

    def workload_changed(self, key: str) -> None:
        """A Workload's admission moved: its gated pods may be pinned now."""
        for pod in self.informer.store.by_index(BY_WORKLOAD, key):
            if gated(pod):
                self._pin_soon(pod)

    def retry(self) -> None:
        for key in list(self._waiting):
            pod = self.informer.store.get(key)
            self._waiting.discard(key)
            if pod is not None and gated(pod):
                self._pin_soon(pod)

    def _pin_soon(self, pod: Object) -> None:
        key = _key(pod)
        if key in self._pinning or not self._is_leader():
            return
        workload_key = workload_of(pod)
        obj = self._workloads.get(workload_key) if workload_key else None
        workload = parse_workload(obj) if obj is not None else None
        if not isinstance(workload, Workload):
            self._waiting.add(key)
            return
        siblings = [
            _pinned(p, self._pinning[_key(p)]) if _key(p) in self._pinning else p
            for p in self.informer.store.by_index(BY_WORKLOAD, workload.key)
        ]
        node = choose_node(pod, workload, siblings)
        if node is None:
            self._waiting.add(key)
            return
        self._pinning[key] = node
        task = asyncio.create_task(self._pin(pod, node))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _pin(self, pod: Object, node: str) -> None:
        meta = pod["metadata"]
        gates = [
            g for g in pod["spec"].get("schedulingGates") or () if g.get("name") != TOPOLOGY_GATE
        ]
        selector = {**(pod["spec"].get("nodeSelector") or {}), HOSTNAME: node}
        patch = {"spec": {"schedulingGates": gates or None, "nodeSelector": selector}}
        try:
            await self._client.merge_patch(
                PODS,
                meta["name"],
                patch,
                namespace=meta["namespace"],
                resource_version=meta.get("resourceVersion"),
            )
        except ApiError as exc:
            self._pinning.pop(_key(pod), None)
            log.info("pod not pinned", pod=meta["name"], node=node, error=str(exc))
            if exc.status == 409:
                self._waiting.add(_key(pod))
            return
        workload_key = workload_of(pod)
        obj = self._workloads.get(workload_key) if workload_key else None
        if obj is not None:
            is_group = bool((meta.get("labels") or {}).get(GROUP_LABEL))
            metrics.gate_removed(TOPOLOGY_GATE, obj, is_group)

    def fail_on(self, workload: str, nodes: frozenset[str], why: str) -> None:
        """Fail the workload's live pods on ``nodes``, so its job restarts now."""
        for pod in self.informer.store.by_index(BY_WORKLOAD, workload):
            if live(pod) and (pod.get("spec") or {}).get("nodeName") in nodes:
                task = asyncio.create_task(self._fail(pod, why))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _fail(self, pod: Object, why: str) -> None:
        meta = pod["metadata"]
        now = _now()
        conditions = [
            c
            for c in (pod.get("status") or {}).get("conditions") or ()
            if c.get("type") != "DisruptionTarget"
        ]
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "HotSwap",
                "message": why,
                "lastTransitionTime": now,
            }
        )
        patch = {"status": {"phase": "Failed", "reason": "HotSwap", "message": why,
                            "conditions": conditions}}  # fmt: skip
        try:
            await self._client.merge_patch(
                PODS, meta["name"], patch, namespace=meta["namespace"], subresource="status"
            )
        except ApiError as exc:
            log.info("pod not failed", pod=meta["name"], error=str(exc))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _pinned(pod: Object, node: str) -> Object:
    """A pod as it will be once a pin in flight lands."""
    spec = {**pod["spec"], "nodeSelector": {HOSTNAME: node}, "schedulingGates": []}
    return {**pod, "spec": spec}


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace')}/{meta['name']}"


def _now() -> str:
    return rfc3339(time.time())
