"""LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) controller, as the LWS operator runs it.

Per set: the leader StatefulSet (``lws_objects``) with ``spec.replicas`` groups; per leader pod,
once it exists (``startupPolicy: LeaderCreated``) or is ready (``LeaderReady``), a worker
StatefulSet of ``size - 1`` pods that the leader pod owns, so deleting a leader removes its
group. Under ``RecreateGroupOnPodRestart`` (the default) a pod of the group that restarted a
container or is being deleted makes the controller delete the leader (foreground), which
recreates the whole group; ``RecreateGroupAfterStart`` does so only once no pod of the group is
pending. A template change gives a new ``template-revision-hash``; the leader StatefulSet's
rolling update then replaces the groups, ``maxUnavailable + maxSurge`` at a time, down to
``rollingUpdateConfiguration.partition``. Status is ``lws_status``'s.

With the ``exclusive-topology`` annotation, leaders get the webhook's affinity terms (one group
per domain) and each worker StatefulSet selects its leader's domain once the leader is placed.

The headless Service ``<lws>`` (and, under ``subdomainPolicy: UniquePerReplica``, one per group
named after its leader) gives the pods their DNS names.

Simplifications: no ControllerRevisions (a group below the partition that is recreated gets the
current template), no surge groups, no sub-groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
    meta,
    owned_by,
)
from kq.sandbox.cluster.apps import InvalidSpec, int_field, merge_diff, running_ready, scaled
from kq.sandbox.cluster.lws_objects import (
    EXCLUSIVE,
    GROUP_INDEX,
    LEADER_NAME,
    REVISION_KEY,
    SET_NAME,
    WORKER_INDEX,
    controller_uid,
    headless_service,
    leader_statefulset,
    revision_key,
    unique_per_replica,
    worker_statefulset,
)
from kq.sandbox.cluster.lws_status import SOURCE, Shape, status_actions
from kq.sandbox.cluster.podinfo import annotations_of, labels_of, phase

_RESTART_POLICIES = ("Default", "None", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart")


@dataclass(frozen=True, slots=True)
class _Settings:
    replicas: int
    size: int
    restart: str
    leader_ready: bool
    surge: int
    unavailable: int
    partition: int


@dataclass(frozen=True, slots=True)
class _Scope:
    pods: list[Obj]
    leader_set: Obj | None
    sets: dict[str, Obj]
    """Worker StatefulSets by name, those a live pod of the set owns."""
    leaders: list[Obj]
    taken: set[str]
    """Every StatefulSet name in the namespace."""


def _settings(lws: Obj) -> _Settings:
    spec = lws.get("spec") or {}
    replicas = int_field(spec, "replicas", 1)
    template = spec.get("leaderWorkerTemplate") or {}
    if not isinstance(template.get("workerTemplate"), Mapping):
        raise InvalidSpec("spec.leaderWorkerTemplate.workerTemplate: Required value")
    size = int_field(template, "size", 1)
    if size < 1:
        raise InvalidSpec("spec.leaderWorkerTemplate.size: must be at least 1")
    restart = str(template.get("restartPolicy") or "RecreateGroupOnPodRestart")
    if restart not in _RESTART_POLICIES:
        raise InvalidSpec(
            f'spec.leaderWorkerTemplate.restartPolicy: Unsupported value: "{restart}"'
        )
    startup = str(spec.get("startupPolicy") or "LeaderCreated")
    if startup not in ("LeaderCreated", "LeaderReady"):
        raise InvalidSpec(f'spec.startupPolicy: Unsupported value: "{startup}"')
    rolling = (spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {}
    surge = min(scaled(rolling.get("maxSurge"), replicas, round_up=True, default=0), replicas)
    unavailable = scaled(rolling.get("maxUnavailable"), replicas, round_up=False, default=1)
    partition = int_field(rolling, "partition", 0)
    return _Settings(
        replicas, size, restart, startup == "LeaderReady", surge, unavailable, partition
    )


def _sync_leader_set(lws: Obj, s: _Settings, leader_set: Obj | None, key: str) -> list[Action]:
    want = leader_statefulset(lws, s.replicas, s.surge, s.unavailable, key, s.partition)
    ref = Ref.of(lws)
    if leader_set is None:
        message = f"Created leader statefulset {meta(lws)['name']}"
        return [Create(want), Event(ref, "GroupsProgressing", message, source=SOURCE)]
    have_key = labels_of(leader_set).get(REVISION_KEY)
    have_spec = leader_set.get("spec") or {}
    have_replicas = have_spec.get("replicas")
    have_partition = ((have_spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get(
        "partition"
    )
    if have_key == key and have_replicas == s.replicas and have_partition == s.partition:
        return []  # compare only what we own: the server defaults the rest of the template
    current = {"metadata": {k: meta(leader_set).get(k) or {} for k in ("labels", "annotations")},
               "spec": {k: have_spec.get(k) for k in want["spec"]}}  # fmt: skip
    wanted = {"metadata": {k: want["metadata"][k] for k in ("labels", "annotations")},
              "spec": want["spec"]}  # fmt: skip
    patch = merge_diff(current, wanted)
    patch.get("spec", {}).pop("selector", None)  # immutable, and never ours to change
    actions: list[Action] = [Patch(Ref.of(leader_set), patch)] if patch else []
    if have_key != key:
        message = f"Creating revision with key {key} for updated LWS"
        actions.append(Event(ref, "CreatingRevision", message, source=SOURCE))
    return actions


def _workers(lws: Obj, s: _Settings, scope: _Scope, nodes: Sequence[Obj]) -> list[Action]:
    """Create the worker StatefulSet of each leader pod that needs one."""
    actions: list[Action] = []
    if s.size == 1:
        return actions
    topology = (meta(lws).get("annotations") or {}).get(EXCLUSIVE)
    for leader in scope.leaders:
        name = str(meta(leader)["name"])
        if meta(leader).get("deletionTimestamp") or name in scope.taken:
            continue  # an old leader's set still there waits for the garbage collector
        if s.leader_ready and not running_ready(leader):
            continue
        workers = worker_statefulset(lws, leader)
        if topology:  # workers follow their leader into its domain once it is placed
            domain = _domain(leader, nodes, topology)
            if isinstance(domain, Event):
                actions.append(domain)
                continue
            if domain is None:
                continue
            workers["spec"]["template"]["spec"]["nodeSelector"] = {
                **(workers["spec"]["template"]["spec"].get("nodeSelector") or {}),
                topology: domain,
            }
        message = f"Created worker statefulset for leader pod {name}"
        actions += [
            Create(workers),
            Event(Ref.of(lws), "GroupsProgressing", message, source=SOURCE),
        ]
    return actions


def _domain(leader: Obj, nodes: Sequence[Obj], topology: str) -> str | Event | None:
    """The leader's value of the topology label (``None``: not scheduled yet)."""
    node_name = str((leader.get("spec") or {}).get("nodeName") or "")
    if not node_name:
        return None
    node = next((n for n in nodes if meta(n).get("name") == node_name), None)
    value = labels_of(node).get(topology) if node is not None else None
    if value is None:
        message = f"node {node_name} does not have topology label {topology}"
        return Event(Ref.of(leader), "FailedCreate", message, "Warning", SOURCE)
    return str(value)


def _restarted(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    every = [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
    return phase(pod) in ("Pending", "Running") and any(
        int(c.get("restartCount") or 0) for c in every
    )


def _recreate_groups(
    lws: Obj, s: _Settings, pods: Sequence[Obj], sets: Mapping[str, Obj]
) -> list[Action]:
    """Delete the leader of every group one of whose pods restarted or is being deleted."""
    if s.restart not in ("RecreateGroupOnPodRestart", "RecreateGroupAfterStart"):
        return []
    by_name = {str(meta(p)["name"]): p for p in pods}
    doomed: dict[str, tuple[Obj, Obj]] = {}
    for pod in pods:
        if not (_restarted(pod) or meta(pod).get("deletionTimestamp")):
            continue
        leader = _leader_of(pod, by_name, sets)
        if leader is None or meta(leader).get("deletionTimestamp"):
            continue
        group = [
            p for p in pods if labels_of(p).get(GROUP_INDEX) == labels_of(leader).get(GROUP_INDEX)
        ]
        pending = len(group) != s.size or any(phase(p) == "Pending" for p in group)
        if s.restart == "RecreateGroupAfterStart" and pending:
            continue
        doomed.setdefault(str(meta(leader)["name"]), (leader, pod))
    actions: list[Action] = []
    for leader, cause in doomed.values():
        index = labels_of(leader).get(GROUP_INDEX, "")
        message = (f"Worker pod {meta(cause)['name']} failed, deleted leader pod "
                   f"{meta(leader)['name']} to recreate group {index}")  # fmt: skip
        actions += [Delete(Ref.of(leader), "Foreground"),
                    Event(Ref.of(lws), "RecreateGroup", message, source=SOURCE)]  # fmt: skip
    return actions


def _leader_of(pod: Obj, by_name: Mapping[str, Obj], sets: Mapping[str, Obj]) -> Obj | None:
    """The leader of the group ``pod`` belongs to (itself for a leader), if still its group."""
    if labels_of(pod).get(WORKER_INDEX) == "0":
        return pod
    name = annotations_of(pod).get(LEADER_NAME) or str(meta(pod)["name"]).rpartition("-")[0]
    leader = by_name.get(name)
    if leader is None or labels_of(leader).get(REVISION_KEY) != labels_of(pod).get(REVISION_KEY):
        return None
    owner_set = sets.get(name)
    if owner_set is None or controller_uid(pod) != meta(owner_set).get("uid"):
        return None
    return leader if controller_uid(owner_set) == meta(leader).get("uid") else None


def _scope(lws: Obj, statefulsets: Sequence[Obj], pods: Sequence[Obj]) -> _Scope:
    m = meta(lws)
    name, ns = str(m["name"]), m.get("namespace")
    mine = [
        p for p in pods if labels_of(p).get(SET_NAME) == name and meta(p).get("namespace") == ns
    ]
    in_ns = [x for x in statefulsets if meta(x).get("namespace") == ns]
    leader_set = next(
        (x for x in in_ns if meta(x)["name"] == name and owned_by(x, str(m["uid"]))), None
    )
    leader_uids = {str(meta(p).get("uid")) for p in mine}
    sets = {str(meta(x)["name"]): x for x in in_ns if controller_uid(x) in leader_uids}
    leaders = sorted((p for p in mine if labels_of(p).get(WORKER_INDEX) == "0"),
                     key=lambda p: str(meta(p)["name"]))  # fmt: skip
    return _Scope(mine, leader_set, sets, leaders, {str(meta(x)["name"]) for x in in_ns})


def restart_groups(lws: Obj, statefulsets: Sequence[Obj], pods: Sequence[Obj]) -> list[Action]:
    """The restart policy alone: the driver runs it before the kubelet, which removes a deleted
    pod at once, where the operator would see it terminating for its grace period."""
    if meta(lws).get("deletionTimestamp"):
        return []
    try:
        s = _settings(lws)
    except InvalidSpec:
        return []  # reported by reconcile_lws
    scope = _scope(lws, statefulsets, pods)
    return _recreate_groups(lws, s, scope.pods, scope.sets)


def _services(lws: Obj, scope: _Scope, services: Sequence[Obj]) -> list[Action]:
    """The headless Service of the set, or one per group under ``UniquePerReplica``."""
    ns, name = meta(lws).get("namespace"), str(meta(lws)["name"])
    have = {str(meta(x)["name"]) for x in services if meta(x).get("namespace") == ns}
    wanted = [headless_service(lws, name, {SET_NAME: name}, lws)]
    if unique_per_replica(lws):
        wanted += [
            headless_service(lws, str(meta(leader)["name"]),
                             {SET_NAME: name, GROUP_INDEX: labels_of(leader).get(GROUP_INDEX, "")},
                             leader)
            for leader in scope.leaders if not meta(leader).get("deletionTimestamp")
        ]  # fmt: skip
    return [Create(svc) for svc in wanted if svc["metadata"]["name"] not in have]


def reconcile_lws(
    lws: Obj,
    statefulsets: Sequence[Obj],
    pods: Sequence[Obj],
    now: datetime,
    *,
    nodes: Sequence[Obj] = (),
    services: Sequence[Obj] = (),
) -> list[Action]:
    """One level-triggered pass over a LeaderWorkerSet, its StatefulSets, Services and pods."""
    if meta(lws).get("deletionTimestamp"):
        return []
    try:
        s = _settings(lws)
    except InvalidSpec as exc:
        return [Event(Ref.of(lws), "InvalidSpec", str(exc), "Warning", SOURCE)]
    scope = _scope(lws, statefulsets, pods)
    key = revision_key(lws)
    actions = _sync_leader_set(lws, s, scope.leader_set, key)
    actions += _recreate_groups(lws, s, scope.pods, scope.sets)
    actions += _workers(lws, s, scope, nodes)
    actions += _services(lws, scope, services)
    shape = Shape(s.replicas, s.size, s.partition)
    return (
        status_actions(lws, shape, scope.leader_set, scope.leaders, scope.sets, key, now) + actions
    )
