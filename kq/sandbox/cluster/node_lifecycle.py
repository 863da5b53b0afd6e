"""Node health: heartbeats, simulated failures, and the taints the lifecycle controller sets.

A failure is injected by annotating the node (``kq dev node fail``); reconciling then derives the
Ready condition and the ``node.kubernetes.io/not-ready`` / ``unreachable`` taints from it, so a
failed pool stays failed however often the loop runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from kq.sandbox.cluster.actions import Action, Event, Obj, Patch, Ref, meta
from kq.sandbox.cluster.clock import parse_rfc3339, rfc3339
from kq.sandbox.cluster.nodes import POOL_LABEL
from kq.sandbox.cluster.podinfo import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    UNSCHEDULABLE_TAINT,
    annotations_of,
    condition,
    labels_of,
)

FAILURE_ANNOTATION = "kq.dev/simulated-failure"
HEARTBEAT_SECONDS = 40.0
"""How often a live kubelet refreshes ``lastHeartbeatTime`` in sandbox seconds."""

Failure = Literal["NotReady", "Unreachable"]
_MANAGED_TAINTS = (NOT_READY_TAINT, UNREACHABLE_TAINT, UNSCHEDULABLE_TAINT)
_READY: dict[str, tuple[str, str, str]] = {
    "": ("True", "KubeletReady", "kubelet is posting ready status"),
    "NotReady": ("False", "KubeletNotReady", "container runtime network not ready"),
    "Unreachable": ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
}


def fail_node(node: Mapping[str, Any], mode: Failure = "Unreachable") -> Patch:
    """Break a node: ``Unreachable`` stops its kubelet, ``NotReady`` makes it report not ready."""
    return Patch(Ref.of(node), {"metadata": {"annotations": {FAILURE_ANNOTATION: mode}}})


def recover_node(node: Mapping[str, Any]) -> Patch:
    return Patch(Ref.of(node), {"metadata": {"annotations": {FAILURE_ANNOTATION: None}}})


def pool_nodes(nodes: Sequence[Obj], pool: str) -> list[Obj]:
    """The nodes of one node pool (a TPU slice fails and is repaired as a whole)."""
    return [n for n in nodes if labels_of(n).get(POOL_LABEL) == pool]


def _failure(node: Mapping[str, Any]) -> str:
    mode = str(annotations_of(node).get(FAILURE_ANNOTATION, ""))
    return mode if mode in _READY else "Unreachable"


def _conditions(node: Mapping[str, Any], now: datetime) -> list[Obj] | None:
    """The new condition list, or ``None`` when nothing needs writing yet."""
    mode = _failure(node)
    status, reason, message = _READY[mode]
    current = condition(node, "Ready") or {}
    changed = current.get("status") != status or current.get("reason") != reason
    beat = current.get("lastHeartbeatTime")
    due = mode != "Unreachable" and (
        beat is None or now - parse_rfc3339(str(beat)) >= timedelta(seconds=HEARTBEAT_SECONDS)
    )
    if not changed and not due:
        return None
    stamp = rfc3339(now)
    out = []
    for cond in (node.get("status") or {}).get("conditions") or ():
        new = dict(cond)
        if cond["type"] == "Ready":
            new.update(status=status, reason=reason, message=message)
            if changed:
                new["lastTransitionTime"] = stamp
        elif mode == "Unreachable" and cond.get("status") != "Unknown":
            # The lifecycle controller marks every condition Unknown once heartbeats stop.
            new.update(status="Unknown", reason="NodeStatusUnknown", message=message)
            new["lastTransitionTime"] = stamp
        if mode != "Unreachable":
            new["lastHeartbeatTime"] = stamp
        out.append(new)
    return out


def _taints(node: Mapping[str, Any], now: datetime) -> list[Obj] | None:
    spec = node.get("spec") or {}
    current: list[Obj] = list(spec.get("taints") or ())
    wanted: list[tuple[str, str]] = []
    mode = _failure(node)
    if mode:
        key = NOT_READY_TAINT if mode == "NotReady" else UNREACHABLE_TAINT
        wanted += [(key, "NoSchedule"), (key, "NoExecute")]
    if spec.get("unschedulable"):
        wanted.append((UNSCHEDULABLE_TAINT, "NoSchedule"))
    kept = [
        t for t in current if t["key"] not in _MANAGED_TAINTS or (t["key"], t["effect"]) in wanted
    ]
    have = {(t["key"], t["effect"]) for t in kept}
    added: list[Obj] = []
    for key, effect in wanted:
        if (key, effect) not in have:
            taint: Obj = {"key": key, "effect": effect}
            if effect == "NoExecute":
                taint["timeAdded"] = rfc3339(now)
            added.append(taint)
    if not added and len(kept) == len(current):
        return None
    return kept + added


def reconcile_nodes(nodes: Sequence[Obj], now: datetime) -> list[Action]:
    """Heartbeats, Ready transitions (with NodeReady/NodeNotReady events) and condition taints."""
    actions: list[Action] = []
    for node in sorted(nodes, key=lambda n: str(meta(n)["name"])):
        ref = Ref.of(node)
        conditions = _conditions(node, now)
        if conditions is not None:
            actions.append(Patch(ref, {"status": {"conditions": conditions}}, "status"))
            before = (condition(node, "Ready") or {}).get("status")
            after = next(c["status"] for c in conditions if c["type"] == "Ready")
            if before != after:
                word = "NodeReady" if after == "True" else "NodeNotReady"
                actions.append(
                    Event(ref, word, f"Node {ref.name} status is now: {word}",
                          "Normal", "node-controller")
                )  # fmt: skip
        taints = _taints(node, now)
        if taints is not None:
            actions.append(Patch(ref, {"spec": {"taints": taints or None}}))
    return actions


def next_heartbeat(nodes: Sequence[Obj]) -> datetime | None:
    """When the earliest live kubelet is due to post its heartbeat."""
    beats = []
    for node in nodes:
        beat = (condition(node, "Ready") or {}).get("lastHeartbeatTime")
        if beat and _failure(node) != "Unreachable":
            beats.append(parse_rfc3339(str(beat)) + timedelta(seconds=HEARTBEAT_SECONDS))
    return min(beats, default=None)
