"""StatefulSet (apps/v1) controller: ordered, stable pods ``<name>-<ordinal>``, rollouts, status.

As kube-controller-manager's: pod ``<set>-<ordinal>`` for each ordinal from
``spec.ordinals.start``, labelled ``statefulset.kubernetes.io/pod-name``,
``apps.kubernetes.io/pod-index`` and ``controller-revision-hash`` (the revision
``<set>-<template hash>``), with ``hostname`` and ``subdomain`` (``serviceName``) set.
``OrderedReady`` (the default) creates one pod at a time, each once every lower ordinal is
Running and Ready, and scales down from the highest ordinal, one at a time, while the others are
healthy; ``Parallel`` creates and deletes at once. A finished pod is deleted and recreated under
the same name. ``RollingUpdate`` replaces pods of an old revision from the highest ordinal down
to ``partition``, at most ``maxUnavailable`` (1) at a time, once the set is healthy; ``OnDelete``
waits for the user to delete them.

Simplifications: no ControllerRevision objects are written (the revision is the name only), so a
pod recreated below the partition gets the current template; volumeClaimTemplates create no
PersistentVolumeClaims.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kq.sandbox.cluster.actions import Action, Create, Delete, Event, Obj, Ref, meta, owned_by
from kq.sandbox.cluster.apps import (
    InvalidSpec,
    active,
    available,
    int_field,
    running_ready,
    scaled,
    serving_pod,
    status_patch,
    template_hash,
)
from kq.sandbox.cluster.podinfo import is_terminal, labels_of

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
SOURCE = "statefulset-controller"

PodDefaults = Callable[[Obj], None]
"""What a mutating admission webhook does to a new pod (the LeaderWorkerSet one, say)."""


def revision(sts: Mapping[str, Any]) -> str:
    """The update revision's name: ``<set>-<hash of the pod template>``."""
    template = (sts.get("spec") or {}).get("template") or {}
    return f"{meta(sts)['name']}-{template_hash(template)}"


def ordinal(pod: Mapping[str, Any], sts: Mapping[str, Any]) -> int | None:
    """The pod's ordinal when its name is ``<set>-<n>``."""
    prefix = f"{meta(sts)['name']}-"
    name = str(meta(pod).get("name", ""))
    tail = name[len(prefix) :]
    return int(tail) if name.startswith(prefix) and tail.isdigit() else None


def build_pod(sts: Obj, index: int, defaults: PodDefaults | None = None) -> Obj:
    spec = sts.get("spec") or {}
    name = f"{meta(sts)['name']}-{index}"
    pod = serving_pod(sts, spec.get("template") or {}, name)
    pod["metadata"]["labels"].update(
        {REVISION_LABEL: revision(sts), POD_NAME_LABEL: name, POD_INDEX_LABEL: str(index)}
    )
    pod["spec"]["hostname"] = name
    if spec.get("serviceName"):
        pod["spec"]["subdomain"] = str(spec["serviceName"])
    if defaults is not None:
        defaults(pod)
    return pod


def _settings(sts: Obj) -> tuple[int, int, bool, str, int, int]:
    spec = sts.get("spec") or {}
    replicas = int_field(spec, "replicas", 1)
    start = int_field(spec.get("ordinals") or {}, "start", 0)
    policy = str(spec.get("podManagementPolicy") or "OrderedReady")
    if policy not in ("OrderedReady", "Parallel"):
        raise InvalidSpec(f'spec.podManagementPolicy: Unsupported value: "{policy}"')
    strategy = spec.get("updateStrategy") or {}
    kind = str(strategy.get("type") or "RollingUpdate")
    if kind not in ("RollingUpdate", "OnDelete"):
        raise InvalidSpec(f'spec.updateStrategy.type: Unsupported value: "{kind}"')
    rolling = strategy.get("rollingUpdate") or {}
    partition = int_field(rolling, "partition", 0)
    surplus = scaled(rolling.get("maxUnavailable"), replicas, round_up=False, default=1)
    return replicas, start, policy == "Parallel", kind, partition, max(surplus, 1)


def _created(sts: Obj, name: str) -> Event:
    message = f"create Pod {name} in StatefulSet {meta(sts)['name']} successful"
    return Event(Ref.of(sts), "SuccessfulCreate", message, source=SOURCE)


def _deleted(sts: Obj, pod: Mapping[str, Any]) -> list[Action]:
    name = meta(pod)["name"]
    message = f"delete Pod {name} in StatefulSet {meta(sts)['name']} successful"
    return [Delete(Ref.of(pod)), Event(Ref.of(sts), "SuccessfulDelete", message, source=SOURCE)]


def _sync(
    sts: Obj,
    by_ordinal: dict[int, Obj],
    wanted: range,
    parallel: bool,
    defaults: PodDefaults | None,
) -> tuple[list[Action], bool]:
    """Create missing pods and replace finished ones; returns the actions and whether every
    wanted pod is Running and Ready."""
    actions: list[Action] = []
    healthy = True
    for index in wanted:
        pod = by_ordinal.get(index)
        ok = False
        if pod is None:
            created = build_pod(sts, index, defaults)
            actions += [Create(created), _created(sts, created["metadata"]["name"])]
        elif meta(pod).get("deletionTimestamp"):
            pass  # recreated under its name once it is gone
        elif is_terminal(pod):
            actions += _deleted(sts, pod)
        else:
            ok = running_ready(pod)
        healthy = healthy and ok
        if not ok and not parallel:
            break  # OrderedReady: the next ordinal waits for this one
    return actions, healthy


def _condemn(sts: Obj, condemned: list[Obj], healthy: bool, parallel: bool) -> list[Action]:
    """Delete pods outside the ordinal range: all at once, or the highest once all is well."""
    live = sorted((p for p in condemned if active(p)), key=lambda p: -(ordinal(p, sts) or 0))
    if parallel:
        return [a for pod in live for a in _deleted(sts, pod)]
    deleting = any(meta(p).get("deletionTimestamp") for p in condemned)
    if not live or deleting or not healthy:
        return []
    return _deleted(sts, live[0])


def _roll(
    sts: Obj, by_ordinal: dict[int, Obj], wanted: range, partition: int, surplus: int
) -> list[Action]:
    """Delete pods of an old revision from the highest ordinal down to the partition."""
    update = revision(sts)
    unavailable = sum(1 for i in wanted if not running_ready(by_ordinal[i]))
    stale = [i for i in reversed(wanted) if i >= partition
             and labels_of(by_ordinal[i]).get(REVISION_LABEL) != update]  # fmt: skip
    return [a for i in stale[: max(surplus - unavailable, 0)] for a in _deleted(sts, by_ordinal[i])]


def reconcile_statefulset(
    sts: Obj, pods: Sequence[Obj], now: datetime, defaults: PodDefaults | None = None
) -> list[Action]:
    """One level-triggered pass over a StatefulSet and the pods it controls."""
    if meta(sts).get("deletionTimestamp"):
        return []
    try:
        replicas, start, parallel, kind, partition, surplus = _settings(sts)
    except InvalidSpec as exc:
        return [Event(Ref.of(sts), "InvalidSpec", str(exc), "Warning", SOURCE)]
    mine = [p for p in pods if owned_by(p, str(meta(sts).get("uid", "")))]
    wanted = range(start, start + replicas)
    by_ordinal: dict[int, Obj] = {}
    condemned: list[Obj] = []
    for pod in mine:
        index = ordinal(pod, sts)
        if index is not None and index in wanted:
            by_ordinal[index] = pod
        else:
            condemned.append(pod)
    actions, healthy = _sync(sts, by_ordinal, wanted, parallel, defaults)
    actions += _condemn(sts, condemned, healthy, parallel)
    if kind == "RollingUpdate" and healthy and not any(active(p) for p in condemned):
        actions += _roll(sts, by_ordinal, wanted, partition, surplus)
    return _status(sts, mine, now) + actions


def _status(sts: Obj, mine: Sequence[Obj], now: datetime) -> list[Action]:
    update = revision(sts)
    old = sts.get("status") or {}
    current = str(old.get("currentRevision") or update)
    alive = [p for p in mine if not is_terminal(p)]
    min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
    status = {
        "observedGeneration": meta(sts).get("generation"),
        "replicas": len(alive),
        "readyReplicas": sum(1 for p in alive if running_ready(p)),
        "availableReplicas": sum(1 for p in alive if available(p, min_ready, now)),
        "currentReplicas": sum(1 for p in alive if labels_of(p).get(REVISION_LABEL) == current),
        "updatedReplicas": sum(1 for p in alive if labels_of(p).get(REVISION_LABEL) == update),
        "currentRevision": current,
        "updateRevision": update,
        "collisionCount": 0,
    }
    want = int((sts.get("spec") or {}).get("replicas", 1))
    if status["updatedReplicas"] == want == status["readyReplicas"] == status["replicas"]:
        status["currentRevision"] = update  # the rollout is complete
        status["currentReplicas"] = status["updatedReplicas"]
    return status_patch(sts, status)
