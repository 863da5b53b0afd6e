"""A LeaderWorkerSet's status, as the LWS operator reports it.

``replicas`` (the leader StatefulSet's pods), ``readyReplicas`` (groups whose leader is ready and
whose worker StatefulSet is fully available on one revision), ``updatedReplicas`` (groups on the
current template revision), ``hpaPodSelector`` (the leaders), ``observedGeneration``, and the
conditions Available, Progressing and UpdateInProgress: the ones wanted are set True, those
exclusive with them turn False, and every change is announced with an event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from kq.sandbox.cluster.actions import Action, Event, Obj, Ref, meta
from kq.sandbox.cluster.apps import running_ready, status_patch
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.lws_objects import (
    GROUP_INDEX,
    REVISION_KEY,
    SET_NAME,
    WORKER_INDEX,
    controller_uid,
)
from kq.sandbox.cluster.podinfo import labels_of

SOURCE = "leaderworkerset"
_EXCLUSIVE = {"Available": ("Progressing", "UpdateInProgress"), "Progressing": ("Available",),
              "UpdateInProgress": ("Available",)}  # fmt: skip
_CONDITIONS = {
    "Available": ("AllGroupsReady", "All replicas are ready"),
    "Progressing": ("GroupsProgressing", "Replicas are progressing"),
    "UpdateInProgress": ("GroupsUpdating", "Rolling Upgrade is in progress"),
}


@dataclass(frozen=True, slots=True)
class Shape:
    """What the status is measured against: groups wanted, pods per group, the partition."""

    replicas: int
    size: int
    partition: int


@dataclass(frozen=True, slots=True)
class _Group:
    index: int
    ready: bool
    updated: bool


def _group(leader: Obj, shape: Shape, sets: Mapping[str, Obj], key: str) -> _Group | None:
    """The group led by ``leader`` (``None``: its workers do not exist yet)."""
    label = labels_of(leader).get(GROUP_INDEX, "")
    index = int(label) if label.isdigit() else shape.replicas
    on_key = labels_of(leader).get(REVISION_KEY) == key
    workers = sets.get(str(meta(leader)["name"]))
    if workers is None or controller_uid(workers) != meta(leader).get("uid"):
        return None if shape.size > 1 else _Group(index, running_ready(leader), on_key)
    st = workers.get("status") or {}
    complete = int((workers.get("spec") or {}).get("replicas") or 0) == int(
        st.get("availableReplicas") or 0
    ) and st.get("currentRevision") == st.get("updateRevision")
    updated = on_key and labels_of(workers).get(REVISION_KEY) == key
    return _Group(index, complete and running_ready(leader), updated)


def _wanted(groups: Sequence[_Group], shape: Shape) -> list[str]:
    # Groups below the partition keep their revision and do not hold the update open.
    rolled = [g for g in groups if shape.partition <= g.index < shape.replicas]
    if not all(g.updated for g in rolled):
        return ["UpdateInProgress", "Progressing"]
    ready = sum(1 for g in groups if g.ready and g.index < shape.replicas)
    if ready == shape.replicas and all(g.ready for g in rolled):
        return ["Available"]
    return ["Progressing"]


def status_actions(
    lws: Obj, shape: Shape, leader_set: Obj | None, leaders: Sequence[Obj],
    sets: Mapping[str, Obj], key: str, now: datetime,
) -> list[Action]:  # fmt: skip
    """The status patch and condition events of one pass."""
    live = [p for p in leaders if not meta(p).get("deletionTimestamp")]
    groups = [g for g in (_group(p, shape, sets, key) for p in live) if g is not None]
    ready = sum(1 for g in groups if g.ready)
    name = str(meta(lws)["name"])
    status: Obj = {
        "replicas": int(((leader_set or {}).get("status") or {}).get("replicas") or 0),
        "readyReplicas": ready,
        "updatedReplicas": sum(1 for g in groups if g.updated),
        "hpaPodSelector": f"{SET_NAME}={name},{WORKER_INDEX}=0",
        "observedGeneration": meta(lws).get("generation"),
    }
    wanted = _wanted(groups, shape)
    old = lws.get("status") or {}
    conditions, changed = _set_conditions(old.get("conditions") or [], wanted, lws, now)
    events: list[Action] = []
    if changed:
        status["conditions"] = conditions
        reason, message = _CONDITIONS[wanted[0]]
        text = f"{message}, with {ready} groups ready of total {shape.replicas} groups"
        events.append(Event(Ref.of(lws), reason, text, source=SOURCE))
    return status_patch(lws, status) + events


def _set_conditions(
    old: Sequence[Obj], wanted: Sequence[str], lws: Obj, now: datetime
) -> tuple[list[Obj], bool]:
    """Set each wanted condition True; the ones exclusive with it turn False."""
    generation = meta(lws).get("generation")
    stamp = rfc3339(now)
    conditions = [dict(c) for c in old]
    for type_ in wanted:
        reason, message = _CONDITIONS[type_]
        new = {"type": type_, "status": "True", "lastTransitionTime": stamp,
               "observedGeneration": generation, "reason": reason, "message": message}  # fmt: skip
        for i, cond in enumerate(conditions):
            if cond.get("type") == type_ and cond.get("status") != "True":
                conditions[i] = new
            elif cond.get("type") in _EXCLUSIVE[type_] and cond.get("status") == "True":
                cond.update(status="False", lastTransitionTime=stamp, observedGeneration=generation)
        if not any(c.get("type") == type_ for c in conditions):
            conditions.append(new)
    for cond in conditions:
        cond["observedGeneration"] = generation
    return conditions, conditions != list(old)
