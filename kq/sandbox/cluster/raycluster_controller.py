"""RayCluster (ray.io/v1) controller: the head pod and worker pods, and the cluster's status.

As KubeRay does: one head pod ``<cluster>-head-<5>`` and, per worker group,
``clamp(replicas, minReplicas, maxReplicas) * numOfHosts`` pods ``<cluster>-<group>-worker-<5>``
(none for a suspended group), every pod labelled ``ray.io/cluster``, ``ray.io/node-type``
(head|worker), ``ray.io/group`` (``headgroup`` or the group name) and ``ray.io/identifier``.
Pods come from the templates as they are when created, so edits made while no pod exists (Kueue's
nodeSelector and tolerations) reach every new pod. Finished pods are deleted and replaced;
``spec.suspend`` deletes every pod. Ray processes never exit by themselves, so pods run until
deleted unless their template declares a run time.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kq.sandbox.cluster.actions import (
    Action,
    Create,
    Delete,
    Event,
    Obj,
    Patch,
    Ref,
    controller_ref,
    meta,
    owned_by,
)
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.kubelet import until_deleted
from kq.sandbox.cluster.names import suffix
from kq.sandbox.cluster.podinfo import condition, is_terminal, labels_of, phase

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"
GROUP_LABEL = "ray.io/group"
HEAD_GROUP = "headgroup"
SOURCE = "raycluster-controller"
INT32_MAX = 2**31 - 1


def desired_workers(group: Mapping[str, Any]) -> int:
    """Pods a worker group wants: replicas clamped to [min, max], times numOfHosts."""
    if group.get("suspend"):
        return 0
    low = int(group.get("minReplicas") or 0)
    high = int(group.get("maxReplicas", INT32_MAX))
    replicas = group.get("replicas")
    wanted = low if replicas is None or int(replicas) < low else min(int(replicas), high)
    return wanted * max(int(group.get("numOfHosts") or 1), 1)


def _labels(cluster: str, node_type: str, group: str, extra: Mapping[str, str]) -> dict[str, str]:
    # The template may add labels but never override the three that select a cluster's pods.
    fixed = (CLUSTER_LABEL, NODE_TYPE_LABEL, GROUP_LABEL)
    return {
        "ray.io/is-ray-node": "yes",
        "ray.io/identifier": f"{cluster}-{node_type}",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
        **{k: v for k, v in extra.items() if k not in fixed},
        CLUSTER_LABEL: cluster,
        NODE_TYPE_LABEL: node_type,
        GROUP_LABEL: group,
    }


def build_pod(cluster: Mapping[str, Any], group: Mapping[str, Any] | None, name: str) -> Obj:
    """A head pod (``group`` None) or a worker pod of ``group``, from its current template."""
    m = meta(cluster)
    spec = cluster.get("spec") or {}
    source = (spec.get("headGroupSpec") or {}) if group is None else group
    template = until_deleted(copy.deepcopy(source.get("template") or {}))
    tmeta = template.get("metadata") or {}
    node_type = "head" if group is None else "worker"
    group_name = HEAD_GROUP if group is None else str(group.get("groupName", ""))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": m.get("namespace", "default"),
            "labels": _labels(str(m["name"]), node_type, group_name, tmeta.get("labels") or {}),
            "annotations": dict(tmeta.get("annotations") or {}),
            "ownerReferences": [controller_ref(cluster)],
        },
        "spec": template.get("spec") or {},
    }


def _alive(pods: Sequence[Obj]) -> list[Obj]:
    return [p for p in pods if not is_terminal(p) and not meta(p).get("deletionTimestamp")]


def _ready(pod: Mapping[str, Any]) -> bool:
    return phase(pod) == "Running" and (condition(pod, "Ready") or {}).get("status") == "True"


def _pod_name(cluster: Mapping[str, Any], prefix: str, taken: set[str], serial: int) -> str:
    uid = str(meta(cluster).get("uid", ""))
    while True:
        name = f"{prefix}-{suffix(f'{uid}/{prefix}/{serial}')}"
        if name not in taken:
            taken.add(name)
            return name
        serial += 1


def _sync_group(
    cluster: Obj, group: Mapping[str, Any] | None, pods: Sequence[Obj], want: int
) -> list[Action]:
    """Delete finished pods and create or delete live ones until ``want`` are alive."""
    finished = [p for p in pods if is_terminal(p) and not meta(p).get("deletionTimestamp")]
    actions: list[Action] = [Delete(Ref.of(p)) for p in finished]
    alive = _alive(pods)
    name = str(meta(cluster)["name"])
    prefix = f"{name}-head" if group is None else f"{name}-{group.get('groupName')}-worker"
    taken = {str(meta(p)["name"]) for p in pods}
    for _ in range(want - len(alive)):
        pod = build_pod(cluster, group, _pod_name(cluster, prefix, taken, len(taken)))
        actions.append(Create(pod))
        actions.append(Event(Ref.of(cluster), "CreatedWorkerPod" if group else "CreatedHeadPod",
                             f"Created pod {pod['metadata']['name']}", source=SOURCE))  # fmt: skip
    # Scale down the pods cheapest to lose: unscheduled, then not ready, then by name.
    order = sorted(alive, key=lambda p: (bool((p.get("spec") or {}).get("nodeName")), _ready(p),
                                         str(meta(p)["name"])))  # fmt: skip
    for pod in order[: max(len(alive) - want, 0)]:
        actions.append(Delete(Ref.of(pod)))
    return actions


def _condition(old: Sequence[Obj], type_: str, status: str, reason: str, now: datetime) -> Obj:
    """A metav1.Condition that keeps its transition time while its status holds."""
    kept = next((c for c in old if c.get("type") == type_), None)
    stamp = rfc3339(now)
    if kept is not None and kept.get("status") == status:
        stamp = str(kept.get("lastTransitionTime") or stamp)
    return {"type": type_, "status": status, "reason": reason, "message": "",
            "lastTransitionTime": stamp}  # fmt: skip


def _status(cluster: Obj, head: Sequence[Obj], workers: Sequence[Obj], now: datetime) -> Obj:
    spec = cluster.get("spec") or {}
    groups = spec.get("workerGroupSpecs") or []
    desired = sum(desired_workers(g) for g in groups)
    live_head = _alive(head)
    head_ready = any(_ready(p) for p in live_head)
    ready_workers = sum(1 for p in _alive(workers) if _ready(p))
    provisioned = head_ready and ready_workers >= desired
    return {
        "desiredWorkerReplicas": desired,
        "availableWorkerReplicas": sum(1 for p in _alive(workers) if phase(p) == "Running"),
        "readyWorkerReplicas": ready_workers,
        "minWorkerReplicas": sum(int(g.get("minReplicas") or 0) for g in groups),
        "maxWorkerReplicas": sum(int(g.get("maxReplicas", INT32_MAX)) for g in groups),
        "head": _head_status(live_head),
        "conditions": _conditions(cluster.get("status") or {}, head_ready, provisioned, now),
        "state": "suspended" if spec.get("suspend") else "ready" if provisioned else None,
    }


def _head_status(live_head: Sequence[Obj]) -> Obj | None:
    if not live_head:
        return None
    pod = live_head[0]
    return {"podName": str(meta(pod)["name"]),
            "podIP": str((pod.get("status") or {}).get("podIP") or "")}  # fmt: skip


def _conditions(
    old: Mapping[str, Any], head_ready: bool, provisioned: bool, now: datetime
) -> list[Obj]:
    """HeadPodReady, and RayClusterProvisioned: once true, it stays true (as KubeRay's)."""
    kept = old.get("conditions") or []
    provisioned = provisioned or any(
        c.get("type") == "RayClusterProvisioned" and c.get("status") == "True" for c in kept
    )
    return [
        _condition(kept, "HeadPodReady", "True" if head_ready else "False",
                   "HeadPodRunningAndReady" if head_ready else "HeadPodNotFound", now),
        _condition(kept, "RayClusterProvisioned", "True" if provisioned else "False",
                   "AllPodRunningAndReadyFirstTime" if provisioned
                   else "RayClusterPodsProvisioning", now),
    ]  # fmt: skip


def reconcile_raycluster(cluster: Obj, pods: Sequence[Obj], now: datetime) -> list[Action]:
    """One level-triggered pass over a RayCluster and the pods it controls."""
    if meta(cluster).get("deletionTimestamp"):
        return []
    spec = cluster.get("spec") or {}
    mine = [p for p in pods if owned_by(p, str(meta(cluster)["uid"]))]
    head = [p for p in mine if labels_of(p).get(NODE_TYPE_LABEL) == "head"]
    suspended = bool(spec.get("suspend"))
    actions = _sync_group(cluster, None, head, 0 if suspended else 1)
    workers: list[Obj] = []
    for group in spec.get("workerGroupSpecs") or []:
        in_group = [p for p in mine if labels_of(p).get(NODE_TYPE_LABEL) == "worker"
                    and labels_of(p).get(GROUP_LABEL) == group.get("groupName")]  # fmt: skip
        workers += in_group
        actions += _sync_group(cluster, group, in_group, 0 if suspended else desired_workers(group))
    status = _status(cluster, head, workers, now)
    old = cluster.get("status") or {}
    patch = {
        k: v for k, v in status.items() if old.get(k) != v and not (v is None and k not in old)
    }
    if patch:
        actions.insert(0, Patch(Ref.of(cluster), {"status": patch}, "status"))
    return actions
