"""What the LeaderWorkerSet operator writes: its StatefulSets, and its pod webhook's defaults.

Names, labels and annotations are upstream's (kubernetes-sigs/lws): the leader StatefulSet is
``<lws>`` (pods ``<lws>-<group>``), each leader pod owns a worker StatefulSet named after it
(pods ``<lws>-<group>-<worker>``, ordinals from 1). Every pod carries
``leaderworkerset.sigs.k8s.io/name``, ``group-index``, ``worker-index`` (0 for the leader),
``group-key`` (SHA-1 of ``<namespace>/<leader pod>``) and ``template-revision-hash`` labels and
the ``size`` annotation; workers also ``leader-name``. The operator's mutating pod webhook adds
the per-pod labels and the ``LWS_*`` environment; the sandbox has no such webhook, so the
StatefulSet controller applies :func:`default_pod` to the pods it creates.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

from kq.sandbox.cluster.actions import Obj, controller_ref, meta
from kq.sandbox.cluster.apps import template_hash
from kq.sandbox.cluster.podinfo import annotations_of, labels_of

PREFIX = "leaderworkerset.sigs.k8s.io/"
SET_NAME = PREFIX + "name"
GROUP_INDEX = PREFIX + "group-index"
WORKER_INDEX = PREFIX + "worker-index"
GROUP_KEY = PREFIX + "group-key"
SIZE = PREFIX + "size"
REPLICAS = PREFIX + "replicas"
LEADER_NAME = PREFIX + "leader-name"
REVISION_KEY = PREFIX + "template-revision-hash"
EXCLUSIVE = PREFIX + "exclusive-topology"
SUBDOMAIN_POLICY = PREFIX + "subdomainPolicy"
UNIQUE_PER_REPLICA = "UniquePerReplica"
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def controller_uid(obj: Mapping[str, Any]) -> str:
    """The uid of the object's controller ("" when it has none)."""
    refs = [r for r in meta(obj).get("ownerReferences") or () if r.get("controller")]
    return str(refs[0].get("uid", "")) if refs else ""


def group_key(namespace: str, leader: str) -> str:
    return hashlib.sha1(f"{namespace}/{leader}".encode()).hexdigest()


def revision_key(lws: Mapping[str, Any]) -> str:
    """The template revision: a hash of what a group is built from."""
    spec = lws.get("spec") or {}
    return template_hash(
        {"template": spec.get("leaderWorkerTemplate") or {}, "network": spec.get("networkConfig")}
    )


def size_of(lws: Mapping[str, Any]) -> int:
    return int(((lws.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("size") or 1)


def _notes(lws: Mapping[str, Any]) -> dict[str, str]:
    notes = dict(meta(lws).get("annotations") or {})
    notes.pop(_LAST_APPLIED, None)
    return notes


def unique_per_replica(lws: Mapping[str, Any]) -> bool:
    """Whether each group gets its own headless Service (``networkConfig.subdomainPolicy``)."""
    network = (lws.get("spec") or {}).get("networkConfig") or {}
    return network.get("subdomainPolicy") == UNIQUE_PER_REPLICA


def headless_service(
    lws: Mapping[str, Any], name: str, selector: Mapping[str, str], owner: Mapping[str, Any]
) -> Obj:
    """The headless Service giving the pods DNS names (``<pod>.<service>``)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": meta(lws).get("namespace", "default"),
            "labels": {SET_NAME: str(meta(lws)["name"])},
            "ownerReferences": [controller_ref(owner)],
        },
        "spec": {"clusterIP": "None", "selector": dict(selector), "publishNotReadyAddresses": True},
    }


def _pod_notes(lws: Mapping[str, Any], tmeta: Mapping[str, Any]) -> dict[str, str]:
    notes = {**(tmeta.get("annotations") or {}), SIZE: str(size_of(lws))}
    exclusive = (meta(lws).get("annotations") or {}).get(EXCLUSIVE)
    if exclusive:
        notes[EXCLUSIVE] = exclusive
    return notes


def leader_statefulset(
    lws: Obj, replicas: int, surge: int, unavailable: int, key: str, partition: int = 0
) -> Obj:
    """The leader StatefulSet: one leader pod per group, all created in parallel."""
    m = meta(lws)
    name = str(m["name"])
    template_spec = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    template = copy.deepcopy(template_spec.get("leaderTemplate") or template_spec["workerTemplate"])
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = {**(tmeta.get("labels") or {}), WORKER_INDEX: "0", SET_NAME: name,
                       REVISION_KEY: key}  # fmt: skip
    tmeta["annotations"] = _pod_notes(lws, tmeta)
    if unique_per_replica(lws):
        tmeta["annotations"][SUBDOMAIN_POLICY] = UNIQUE_PER_REPLICA
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": name,
            "namespace": m.get("namespace", "default"),
            "labels": {**(m.get("labels") or {}), SET_NAME: name, REVISION_KEY: key},
            "annotations": {**_notes(lws), REPLICAS: str(replicas)},
            "ownerReferences": [controller_ref(lws)],
        },
        "spec": {
            "serviceName": name,
            "replicas": replicas,
            "podManagementPolicy": "Parallel",
            "template": template,
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "maxUnavailable": max(unavailable + surge, 1),
                    "partition": partition,
                },
            },
            "selector": {"matchLabels": {SET_NAME: name, WORKER_INDEX: "0"}},
        },
    }


def worker_statefulset(lws: Obj, leader: Obj) -> Obj:
    """The worker StatefulSet of one group, owned by its leader pod."""
    m, lm = meta(lws), meta(leader)
    keys = {
        GROUP_INDEX: labels_of(leader).get(GROUP_INDEX, ""),
        SET_NAME: str(m["name"]),
        GROUP_KEY: labels_of(leader).get(GROUP_KEY, ""),
    }
    template_spec = (lws.get("spec") or {}).get("leaderWorkerTemplate") or {}
    template = copy.deepcopy(template_spec.get("workerTemplate") or {})
    tmeta = template.setdefault("metadata", {})
    labels = {**keys, REVISION_KEY: labels_of(leader).get(REVISION_KEY, "")}
    tmeta["labels"] = {**(tmeta.get("labels") or {}), **labels}
    tmeta["annotations"] = {**_pod_notes(lws, tmeta), LEADER_NAME: str(lm["name"])}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": str(lm["name"]),
            "namespace": m.get("namespace", "default"),
            "labels": {**(m.get("labels") or {}), **labels},
            "annotations": _notes(lws),
            "ownerReferences": [controller_ref(leader)],
        },
        "spec": {
            "serviceName": str(lm["name"] if unique_per_replica(lws) else m["name"]),
            "replicas": size_of(lws) - 1,
            "podManagementPolicy": "Parallel",
            "ordinals": {"start": 1},
            "template": template,
            "selector": {"matchLabels": keys},
        },
    }


def _exclusive(pod: Obj, key: str, topology: str) -> None:
    """The leader's required affinity to its own group and anti-affinity to every other group,
    both on the topology label: one group per domain."""
    affinity = pod.setdefault("spec", {}).setdefault("affinity", {})
    same = [{"key": GROUP_KEY, "operator": "In", "values": [key]}]
    other = [
        {"key": GROUP_KEY, "operator": "Exists"},
        {"key": GROUP_KEY, "operator": "NotIn", "values": [key]},
    ]
    together = {"labelSelector": {"matchExpressions": same}, "topologyKey": topology}
    apart = {"labelSelector": {"matchExpressions": other}, "topologyKey": topology}
    for kind, term in (("podAffinity", together), ("podAntiAffinity", apart)):
        terms = affinity.setdefault(kind, {}).setdefault(
            "requiredDuringSchedulingIgnoredDuringExecution", []
        )
        if not any(t.get("topologyKey") == topology for t in terms):
            terms.append(term)


def default_pod(pod: Obj) -> None:
    """The LWS pod webhook, on a pod being created: group labels and the LWS_* variables.

    Pods without the set-name label are not LeaderWorkerSet pods and stay as they are.
    """
    labels = pod["metadata"].setdefault("labels", {})
    if SET_NAME not in labels:
        return
    name = str(pod["metadata"]["name"])
    index = name.rpartition("-")[2]
    if labels.get(WORKER_INDEX) == "0":
        labels.setdefault(GROUP_INDEX, index)
        labels.setdefault(GROUP_KEY, group_key(str(pod["metadata"].get("namespace", "")), name))
        topology = annotations_of(pod).get(EXCLUSIVE)
        if topology:
            _exclusive(pod, labels[GROUP_KEY], topology)
        if annotations_of(pod).get(SUBDOMAIN_POLICY) == UNIQUE_PER_REPLICA:
            pod.setdefault("spec", {})["subdomain"] = name
    else:
        labels[WORKER_INDEX] = index
    spec = pod.setdefault("spec", {})
    leader = f"{labels[SET_NAME]}-{labels.get(GROUP_INDEX, '')}"
    env = [
        {"name": "LWS_LEADER_ADDRESS",
         "value": f"{leader}.{spec.get('subdomain', '')}.{pod['metadata'].get('namespace', '')}"},
        {"name": "LWS_GROUP_SIZE", "value": annotations_of(pod).get(SIZE, "1")},
        {"name": "LWS_WORKER_INDEX", "value": labels[WORKER_INDEX]},
    ]  # fmt: skip
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        have = {e.get("name") for e in container.get("env") or ()}
        container["env"] = [
            *(container.get("env") or []),
            *(e for e in env if e["name"] not in have),
        ]
