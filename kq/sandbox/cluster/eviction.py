"""What happens to pods on a failed node: kube's node lifecycle, taint-eviction and pod GC parts.

- A node whose Ready condition leaves True gets its pods' Ready condition set False (event
  ``NodeNotReady``), as the node lifecycle controller's MarkPodsNotReady does.
- The taint manager evicts a pod from a node with ``NoExecute`` taints: at once when a taint is
  not tolerated, else when the shortest ``tolerationSeconds`` among the tolerations it uses has
  run out since the taint's ``timeAdded`` (a toleration without seconds tolerates forever).
  Eviction adds ``DisruptionTarget=True`` (reason ``DeletionByTaintManager``), then deletes.
- Every pod counts as tolerating ``not-ready`` and ``unreachable`` for 300 s unless it says
  otherwise, which is what kube-apiserver's DefaultTolerationSeconds admission writes into pods;
  reading it here keeps the rule whether or not the API server added them.
- A pod bound to a node that no longer exists is failed (``DeletionByPodGC``) and force-deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kq.api.selectors import Taint, Toleration, parse_tolerations
from kq.sandbox.cluster.actions import Action, Delete, Event, Obj, Patch, Ref, meta
from kq.sandbox.cluster.clock import parse_rfc3339, rfc3339
from kq.sandbox.cluster.podinfo import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    condition,
    is_terminal,
    node_name_of,
    ready_status,
)

DEFAULT_TOLERATION_SECONDS = 300
TAINT_MANAGER = "taint-eviction-controller"
_EVICTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"
_AT_ONCE = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _Tolerating:
    toleration: Toleration
    seconds: int | None  # None: forever


def _effective_tolerations(pod: Mapping[str, Any]) -> tuple[_Tolerating, ...]:
    """The pod's tolerations with their seconds, plus the defaults DefaultTolerationSeconds adds."""
    raw = list((pod.get("spec") or {}).get("tolerations") or ())
    parsed = parse_tolerations(raw)
    out = [
        _Tolerating(t, None if r.get("tolerationSeconds") is None else int(r["tolerationSeconds"]))
        for t, r in zip(parsed, raw, strict=True)
    ]
    for key in (NOT_READY_TAINT, UNREACHABLE_TAINT):
        # The admission plugin counts any toleration of the key (or of every key) for NoExecute.
        covered = any(t.key in (key, "") and t.effect in ("NoExecute", "") for t in parsed)
        if not covered:
            default = Toleration(key, "Exists", "", "NoExecute")
            out.append(_Tolerating(default, DEFAULT_TOLERATION_SECONDS))
    return tuple(out)


def _no_execute(node: Mapping[str, Any]) -> list[tuple[Taint, datetime | None]]:
    out = []
    for raw in (node.get("spec") or {}).get("taints") or ():
        if raw.get("effect") == "NoExecute":
            added = raw.get("timeAdded")
            taint = Taint(str(raw["key"]), str(raw.get("value", "")), "NoExecute")
            out.append((taint, parse_rfc3339(str(added)) if added else None))
    return out


def eviction_time(pod: Mapping[str, Any], node: Mapping[str, Any]) -> datetime | None:
    """When the taint manager evicts ``pod`` from ``node``; ``None``: never (no such taint, or
    tolerated forever). A taint without ``timeAdded`` gives no time to count from: evict now."""
    taints = _no_execute(node)
    if not taints:
        return None
    tolerations = _effective_tolerations(pod)
    used: list[_Tolerating] = []
    for taint, _ in taints:
        match = next((t for t in tolerations if t.toleration.tolerates(taint)), None)
        if match is None:
            return _AT_ONCE
        used.append(match)
    finite = [t.seconds for t in used if t.seconds is not None]
    if not finite:
        return None
    added = [when for _, when in taints if when is not None]
    if not added:
        return _AT_ONCE
    return min(added) + timedelta(seconds=max(min(finite), 0))


def _evict(pod: Obj, now: datetime) -> list[Action]:
    ref = Ref.of(pod)
    disruption = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                  "message": _EVICTION_MESSAGE, "lastProbeTime": None,
                  "lastTransitionTime": rfc3339(now)}  # fmt: skip
    return [
        Patch(ref, {"status": {"conditions": _with(pod, disruption)}}, "status"),
        Event(ref, "TaintManagerEviction", f"Marking for deletion Pod {ref.namespace}/{ref.name}",
              source=TAINT_MANAGER),
        Delete(ref),
    ]  # fmt: skip


def _mark_not_ready(pod: Obj, now: datetime) -> list[Action]:
    ready = condition(pod, "Ready")
    if ready is None or ready.get("status") != "True":
        return []
    changed = {**ready, "status": "False", "lastTransitionTime": rfc3339(now)}
    ref = Ref.of(pod)
    return [
        Patch(ref, {"status": {"conditions": _with(pod, changed)}}, "status"),
        Event(ref, "NodeNotReady", "Node is not ready", "Warning", "node-controller"),
    ]


def _orphaned(pod: Obj, now: datetime) -> list[Action]:
    """Pod GC: the pod's node is gone, so nothing will ever stop it; fail and force-delete it."""
    ref = Ref.of(pod)
    actions: list[Action] = []
    if not is_terminal(pod):
        disruption = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                      "message": "PodGC: node no longer exists", "lastProbeTime": None,
                      "lastTransitionTime": rfc3339(now)}  # fmt: skip
        status = {"phase": "Failed", "conditions": _with(pod, disruption)}
        actions.append(Patch(ref, {"status": status}, "status"))
    if meta(pod).get("deletionGracePeriodSeconds") != 0:
        actions.append(Delete(ref, grace_period_seconds=0))
    return actions


def _with(pod: Mapping[str, Any], cond: Obj) -> list[Obj]:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return [*(c for c in conditions if c["type"] != cond["type"]), cond]


def _watched(pod: Mapping[str, Any]) -> bool:
    deleting = bool(meta(pod).get("deletionTimestamp"))
    return bool(node_name_of(pod)) and not is_terminal(pod) and not deleting


def reconcile_evictions(pods: Sequence[Obj], nodes: Sequence[Obj], now: datetime) -> list[Action]:
    """One pass of pod GC, MarkPodsNotReady and the taint manager over every bound pod."""
    by_name = {str(meta(n)["name"]): n for n in nodes}
    actions: list[Action] = []
    for pod in sorted(pods, key=lambda p: (meta(p).get("namespace", ""), meta(p)["name"])):
        if not node_name_of(pod):
            continue
        node = by_name.get(node_name_of(pod))
        if node is None:
            actions += _orphaned(pod, now)
        elif not _watched(pod):
            continue
        elif (when := eviction_time(pod, node)) is not None and when <= now:
            actions += _evict(pod, now)
        elif ready_status(node) != "True":
            actions += _mark_not_ready(pod, now)
    return actions


def next_eviction(pods: Sequence[Obj], nodes: Sequence[Obj]) -> datetime | None:
    """When the taint manager next evicts a pod: the driver's next reason to reconcile."""
    by_name = {str(meta(n)["name"]): n for n in nodes}
    moments = []
    for pod in pods:
        node = by_name.get(node_name_of(pod))
        if _watched(pod) and node is not None:
            when = eviction_time(pod, node)
            if when is not None:
                moments.append(when)
    return min(moments, default=None)
