"""Deployment (apps/v1) controller: ReplicaSets per pod template, rollouts, scale, status.

As kube-controller-manager's: the ReplicaSet of the current template is
``<deployment>-<pod-template-hash>``, and the hash is also a label on the ReplicaSet, in its
selector and on its pods; ``deployment.kubernetes.io/revision`` numbers the templates. A template
change creates a new ReplicaSet and replaces the old pods: ``RollingUpdate`` (maxSurge and
maxUnavailable, 25% each by default) scales the new one up and the old ones down within those
bounds as pods become available; ``Recreate`` scales the old ones to zero and starts the new one
once their pods are gone. Old ReplicaSets at zero beyond ``revisionHistoryLimit`` are deleted.
Status counts the ReplicaSets' pods; conditions Available and Progressing carry upstream's
reasons and messages, and ScalingReplicaSet events announce every scale.

A rollout that does not move for ``progressDeadlineSeconds`` (600) turns Progressing False with
ProgressDeadlineExceeded, as pods held back by scheduling gates do.

Simplifications: a scale during a rollout goes to the new ReplicaSet only (no proportional
scaling), and ``paused`` stops rollouts but not scaling.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
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
from kq.sandbox.cluster.apps import (
    InvalidSpec,
    int_field,
    scaled,
    set_condition,
    status_patch,
    template_hash,
)
from kq.sandbox.cluster.clock import parse_rfc3339

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
SOURCE = "deployment-controller"


@dataclass(slots=True)
class _Pass:
    deployment: Obj
    replicas: int
    surge: int
    unavailable: int
    actions: list[Action] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    """Each ReplicaSet's ``spec.replicas`` after this pass, by name."""

    def scale(self, rs: Obj, to: int) -> None:
        name = str(meta(rs)["name"])
        before = self.sizes[name]
        if before == to:
            return
        self.sizes[name] = to
        notes = {DESIRED: str(self.replicas), MAX_REPLICAS: str(self.replicas + self.surge)}
        patch = {"metadata": {"annotations": notes}, "spec": {"replicas": to}}
        self.actions.append(Patch(Ref.of(rs), patch))
        word = "up" if to > before else "down"
        self.actions.append(Event(Ref.of(self.deployment), "ScalingReplicaSet",
                                  f"Scaled {word} replica set {name} from {before} to {to}",
                                  source=SOURCE))  # fmt: skip


def _strip_hash(template: Mapping[str, Any]) -> Obj:
    out = copy.deepcopy(dict(template))
    labels = (out.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(HASH_LABEL, None)
        if not labels:
            out["metadata"].pop("labels")
    return out


def _revision(obj: Mapping[str, Any]) -> int:
    try:
        return int((meta(obj).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _status_of(rs: Mapping[str, Any], key: str) -> int:
    return int((rs.get("status") or {}).get(key) or 0)


def _new_replicaset(deployment: Obj, revision: int, replicas: int, surge: int) -> Obj:
    spec = deployment.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    pod_hash = template_hash(template)
    tmeta = template.setdefault("metadata", {})
    tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: pod_hash}
    selector = copy.deepcopy(spec.get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: pod_hash}
    m = meta(deployment)
    desired = int(spec.get("replicas", 1))
    notes = {**(m.get("annotations") or {}), REVISION: str(revision), DESIRED: str(desired),
             MAX_REPLICAS: str(desired + surge)}  # fmt: skip
    notes.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{m['name']}-{pod_hash}",
            "namespace": m.get("namespace", "default"),
            "labels": dict(tmeta["labels"]),
            "annotations": notes,
            "ownerReferences": [controller_ref(deployment)],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": int(spec.get("minReadySeconds") or 0),
            "selector": selector,
            "template": template,
        },
    }


def _rolling(p: _Pass, new: Obj, old: Sequence[Obj]) -> None:
    """One step of a rolling update: surge the new ReplicaSet, then shed old pods."""
    name = str(meta(new)["name"])
    total = sum(p.sizes.values())
    if p.sizes[name] < p.replicas:
        room = p.replicas + p.surge - total
        if room > 0:
            p.scale(new, min(p.sizes[name] + room, p.replicas))
    elif p.sizes[name] > p.replicas:
        p.scale(new, p.replicas)
    min_available = p.replicas - p.unavailable
    new_unavailable = p.sizes[name] - _status_of(new, "availableReplicas")
    budget = sum(p.sizes.values()) - min_available - new_unavailable
    oldest_first = sorted(old, key=lambda rs: (str(meta(rs).get("creationTimestamp")),
                                               str(meta(rs)["name"])))  # fmt: skip
    for rs in oldest_first:  # unhealthy old pods go first: losing them costs no availability
        size = p.sizes[str(meta(rs)["name"])]
        cut = min(budget, size - _status_of(rs, "availableReplicas"))
        if cut > 0:
            p.scale(rs, size - cut)
            budget -= cut
    spare = sum(_status_of(rs, "availableReplicas") for rs in [*old, new]) - min_available
    for rs in oldest_first:
        size = p.sizes[str(meta(rs)["name"])]
        cut = min(size, spare, max(budget, 0))
        if cut > 0:
            p.scale(rs, size - cut)
            spare -= cut
            budget -= cut


def _recreate(p: _Pass, new: Obj, old: Sequence[Obj]) -> None:
    for rs in old:
        p.scale(rs, 0)
    if all(_status_of(rs, "replicas") == 0 for rs in old):
        p.scale(new, p.replicas)


def _cleanup(p: _Pass, old: Sequence[Obj], limit: int) -> None:
    idle = [
        rs for rs in old if p.sizes[str(meta(rs)["name"])] == 0 and not _status_of(rs, "replicas")
    ]
    idle.sort(key=_revision)
    p.actions += [Delete(Ref.of(rs)) for rs in idle[: max(len(idle) - limit, 0)]]


def _conditions(p: _Pass, new: Obj, old: Sequence[Obj], created: bool, now: datetime) -> list[Obj]:
    available = sum(_status_of(rs, "availableReplicas") for rs in [*old, new])
    conditions = list((p.deployment.get("status") or {}).get("conditions") or ())
    if available >= p.replicas - p.unavailable:
        conditions = set_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                                   "Deployment has minimum availability.", now)  # fmt: skip
    else:
        conditions = set_condition(
            conditions, "Available", "False", "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.", now,
        )  # fmt: skip
    return _progressing(p, conditions, new, old, created, now)


def _progressing(
    p: _Pass, conditions: list[Obj], new: Obj, old: Sequence[Obj], created: bool, now: datetime
) -> list[Obj]:
    """Progressing: created, updated on every step forward, done, or out of time."""
    rs_name = str(meta(new)["name"])
    complete = (
        _status_of(new, "replicas") == p.replicas
        and _status_of(new, "availableReplicas") == p.replicas
        and p.sizes[rs_name] == p.replicas
        and all(_status_of(rs, "replicas") == 0 for rs in old)
    )
    word = f'ReplicaSet "{rs_name}"'
    if complete:
        return set_condition(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                             f"{word} has successfully progressed.", now)  # fmt: skip
    if created:
        return set_condition(conditions, "Progressing", "True", "NewReplicaSetCreated",
                             f'Created new replica set "{rs_name}"', now)  # fmt: skip
    if p.actions or _moved(p.deployment, new, old):
        return set_condition(conditions, "Progressing", "True", "ReplicaSetUpdated",
                             f"{word} is progressing.", now, touch=True)  # fmt: skip
    current = next((c for c in conditions if c.get("type") == "Progressing"), None)
    deadline = _deadline(p.deployment, current)
    if deadline is not None and deadline <= now:
        return set_condition(conditions, "Progressing", "False", "ProgressDeadlineExceeded",
                             f"{word} has timed out progressing.", now)  # fmt: skip
    return conditions  # no progress this pass: the condition stands


def _moved(deployment: Obj, new: Obj, old: Sequence[Obj]) -> bool:
    """Whether the rollout went forward since the status last written (upstream's test)."""
    before = deployment.get("status") or {}
    every = [*old, new]
    now = {
        "updatedReplicas": _status_of(new, "replicas"),
        "readyReplicas": sum(_status_of(rs, "readyReplicas") for rs in every),
        "availableReplicas": sum(_status_of(rs, "availableReplicas") for rs in every),
    }
    if any(value > int(before.get(key) or 0) for key, value in now.items()):
        return True
    old_pods = sum(_status_of(rs, "replicas") for rs in old)
    was = int(before.get("replicas") or 0) - int(before.get("updatedReplicas") or 0)
    return old_pods < was


def _deadline(deployment: Obj, progressing: Mapping[str, Any] | None) -> datetime | None:
    """When a rollout that stopped moving times out (``None``: finished, timed out, or no
    deadline: ``progressDeadlineSeconds`` of 2^31-1 means none, as upstream)."""
    seconds = int((deployment.get("spec") or {}).get("progressDeadlineSeconds") or 600)
    if progressing is None or seconds >= 2**31 - 1 or progressing.get("status") != "True":
        return None
    if progressing.get("reason") == "NewReplicaSetAvailable" or not progressing.get(
        "lastUpdateTime"
    ):
        return None
    return parse_rfc3339(str(progressing["lastUpdateTime"])) + timedelta(seconds=seconds)


def progress_deadline(deployment: Obj) -> datetime | None:
    """When the Deployment's rollout times out unless it moves (the driver wakes for it)."""
    conditions = (deployment.get("status") or {}).get("conditions") or ()
    current = next((c for c in conditions if c.get("type") == "Progressing"), None)
    return _deadline(deployment, current)


def _settings(deployment: Obj) -> tuple[int, int, int, str]:
    spec = deployment.get("spec") or {}
    replicas = int_field(spec, "replicas", 1)
    strategy = spec.get("strategy") or {}
    kind = str(strategy.get("type") or "RollingUpdate")
    if kind not in ("RollingUpdate", "Recreate"):
        raise InvalidSpec(f'spec.strategy.type: Unsupported value: "{kind}"')
    rolling = strategy.get("rollingUpdate") or {}
    surge = scaled(rolling.get("maxSurge"), replicas, round_up=True, default="25%")
    unavailable = scaled(rolling.get("maxUnavailable"), replicas, round_up=False, default="25%")
    if kind == "Recreate":
        surge, unavailable = 0, replicas
    elif surge == 0 and unavailable == 0:
        unavailable = 1  # upstream's floor: a rollout must be able to move
    return replicas, surge, min(unavailable, replicas), kind


def _split(mine: Sequence[Obj], template: Mapping[str, Any]) -> tuple[Obj | None, list[Obj]]:
    """The ReplicaSet of the current template (if any), and the old ones."""
    want = _strip_hash(template)
    new = next(
        (rs for rs in mine if _strip_hash((rs.get("spec") or {}).get("template") or {}) == want),
        None,
    )
    return new, [rs for rs in mine if rs is not new]


def reconcile_deployment(
    deployment: Obj, replicasets: Sequence[Obj], now: datetime
) -> list[Action]:
    """One level-triggered pass over a Deployment and the ReplicaSets it controls."""
    m = meta(deployment)
    if m.get("deletionTimestamp"):
        return []
    try:
        replicas, surge, unavailable, kind = _settings(deployment)
    except InvalidSpec as exc:
        return [Event(Ref.of(deployment), "InvalidSpec", str(exc), "Warning", SOURCE)]
    spec = deployment.get("spec") or {}
    mine = [rs for rs in replicasets if owned_by(rs, str(m.get("uid", "")))]
    new, old = _split(mine, spec.get("template") or {})
    p = _Pass(deployment, replicas, surge, unavailable)
    p.sizes = {
        str(meta(rs)["name"]): int((rs.get("spec") or {}).get("replicas") or 0) for rs in mine
    }
    created = new is None
    top = max((_revision(rs) for rs in mine), default=0)
    # A template seen before (a rollback) takes the next revision, as upstream renumbers it.
    revision = top + 1 if new is None or _revision(new) < top else top
    if new is not None and _revision(new) != revision:
        notes = {REVISION: str(revision)}
        p.actions.append(Patch(Ref.of(new), {"metadata": {"annotations": notes}}))
    if new is None:
        if spec.get("paused"):
            return []
        new = _new_replicaset(deployment, revision, 0, surge)
        p.actions.append(Create(new))
        p.sizes[str(meta(new)["name"])] = 0
    if spec.get("paused"):
        p.scale(new, replicas)
    elif kind == "Recreate":
        _recreate(p, new, old)
    else:
        _rolling(p, new, old)
    _cleanup(p, old, int(spec.get("revisionHistoryLimit", 10)))
    if created:  # born at its first size, as upstream creates it: no separate scale patch
        new["spec"]["replicas"] = p.sizes[str(meta(new)["name"])]
        p.actions = [a for a in p.actions if not (isinstance(a, Patch) and a.ref == Ref.of(new))]
    return _finish(p, new, old, created, revision, now)


def _finish(
    p: _Pass, new: Obj, old: Sequence[Obj], created: bool, revision: int, now: datetime
) -> list[Action]:
    everything = [*old, new]
    status = {
        "observedGeneration": meta(p.deployment).get("generation"),
        "replicas": sum(_status_of(rs, "replicas") for rs in everything),
        "updatedReplicas": _status_of(new, "replicas"),
        "readyReplicas": sum(_status_of(rs, "readyReplicas") for rs in everything),
        "availableReplicas": sum(_status_of(rs, "availableReplicas") for rs in everything),
        "unavailableReplicas": max(
            sum(p.sizes.values()) - sum(_status_of(rs, "availableReplicas") for rs in everything), 0
        ),
        "conditions": _conditions(p, new, old, created, now),
    }
    actions: list[Action] = []
    if _revision(p.deployment) != revision:
        notes = {REVISION: str(revision)}
        actions.append(Patch(Ref.of(p.deployment), {"metadata": {"annotations": notes}}))
    return actions + status_patch(p.deployment, status) + p.actions
