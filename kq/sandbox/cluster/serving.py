"""The serving kinds in the simulated cluster: Deployments, ReplicaSets, StatefulSets and
LeaderWorkerSets, run in the order their objects create one another.

The driver applies each yielded batch before the next controller runs, so every controller sees
what the ones before it wrote (a Deployment's new ReplicaSet gets its pods in the same pass).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

from kq.runtime.resources import Resource
from kq.sandbox.cluster.actions import Action, Obj
from kq.sandbox.cluster.apps import available_at
from kq.sandbox.cluster.deployment_controller import progress_deadline, reconcile_deployment
from kq.sandbox.cluster.lws_controller import reconcile_lws, restart_groups
from kq.sandbox.cluster.lws_objects import default_pod
from kq.sandbox.cluster.replicaset_controller import reconcile_replicaset
from kq.sandbox.cluster.statefulset_controller import reconcile_statefulset

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
REPLICASETS = Resource("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)
LEADERWORKERSETS = Resource(
    "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", namespaced=True
)
SERVICES = Resource("", "v1", "services", "Service", namespaced=True)
BUILTIN = {r.kind: r for r in (DEPLOYMENTS, REPLICASETS, STATEFULSETS, SERVICES)}
"""Kinds every API server serves (Services: a LeaderWorkerSet's headless ones)."""

View = Callable[[str], list[Obj]]


def passes(view: View, now: datetime) -> Iterator[list[Action]]:
    """Each serving controller's actions, one object at a time, parents before children."""
    for deployment in view("Deployment"):
        yield reconcile_deployment(deployment, view("ReplicaSet"), now)
    pods = view("Pod")
    for rs in view("ReplicaSet"):
        yield reconcile_replicaset(rs, pods, now)
    for lws in view("LeaderWorkerSet"):
        yield reconcile_lws(lws, view("StatefulSet"), view("Pod"), now, nodes=view("Node"),
                            services=view("Service"))  # fmt: skip
    pods = view("Pod")
    for sts in view("StatefulSet"):
        yield reconcile_statefulset(sts, pods, now, default_pod)


def before_kubelet(view: View) -> Iterator[list[Action]]:
    """What must see a deleted pod before the kubelet removes it: LWS group restarts."""
    for lws in view("LeaderWorkerSet"):
        yield restart_groups(lws, view("StatefulSet"), view("Pod"))


def next_wakeup(view: View) -> datetime | None:
    """When a ready pod of a set with ``minReadySeconds`` becomes available, or a stalled
    rollout times out."""
    moments = [m for d in view("Deployment") if (m := progress_deadline(d)) is not None]
    for kind in ("ReplicaSet", "StatefulSet"):
        for owner in view(kind):
            wait = int((owner.get("spec") or {}).get("minReadySeconds") or 0)
            if wait <= 0:
                continue
            uid = (owner.get("metadata") or {}).get("uid")
            for pod in view("Pod"):
                refs = (pod.get("metadata") or {}).get("ownerReferences") or ()
                if any(r.get("uid") == uid for r in refs):
                    moment = available_at(pod, wait)
                    if moment is not None:
                        moments.append(moment)
    return min(moments, default=None)
