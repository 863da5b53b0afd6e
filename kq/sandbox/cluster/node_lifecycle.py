"""Node health: the simulated kubelets' heartbeats and failures, and the lifecycle taints.

A failure is injected by annotating the node (``kq dev node fail``): ``Unreachable`` stops its
kubelet (every condition turns Unknown, heartbeats stop), ``NotReady`` makes it post Ready=False.
A Ready condition that someone else turned False or Unknown (``kubectl patch --subresource
status``) is left as it is: that node stays failed until its Ready condition turns True again or
``kq dev node recover`` marks it ``Recovered``, after which its kubelet posts a healthy status
and the mark goes away. Only this module writes node status, so recovery never races a heartbeat.

Taints follow the Ready condition as kube's node lifecycle controller sets them, whoever caused
it: ``node.kubernetes.io/not-ready`` (Ready=False) or ``node.kubernetes.io/unreachable``
(Ready=Unknown), each as ``NoExecute`` (with ``timeAdded``, which starts the pods' toleration
clocks) and as the ``NoSchedule`` taint TaintNodesByCondition adds; a cordoned node gets
``node.kubernetes.io/unschedulable:NoSchedule``. Recovery removes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from kq.sandbox.cluster.actions import Action, Event, Obj, Patch, Ref, meta
from kq.sandbox.cluster.clock import parse_rfc3339, rfc3339
from kq.sandbox.cluster.nodes import POOL_LABEL, ready_conditions
from kq.sandbox.cluster.podinfo import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    UNSCHEDULABLE_TAINT,
    annotations_of,
    condition,
    labels_of,
    ready_status,
)

FAILURE_ANNOTATION = "kq.dev/simulated-failure"
RECOVERED = "Recovered"
"""What ``kq dev node recover`` writes into the annotation; the next pass heals and drops it."""
HEARTBEAT_SECONDS = 300.0
"""How often a live kubelet with nothing new to report posts its status (refreshing
``lastHeartbeatTime``), in sandbox seconds: kubelet's ``nodeStatusReportFrequency`` (5 min).
Its liveness proper goes to a Lease every 10 s upstream, which nothing here reads; every node
posting every 40 s put a burst of 16 Node writes into any few seconds of the S2 profile."""

Failure = Literal["NotReady", "Unreachable"]
_MANAGED_TAINTS = (NOT_READY_TAINT, UNREACHABLE_TAINT, UNSCHEDULABLE_TAINT)
_FAILED_READY: dict[str, tuple[str, str, str]] = {
    "NotReady": ("False", "KubeletNotReady", "container runtime network not ready"),
    "Unreachable": ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
}
_CONDITION_TAINT = {"False": NOT_READY_TAINT, "Unknown": UNREACHABLE_TAINT}


def fail_node(node: Mapping[str, Any], mode: Failure = "Unreachable") -> Patch:
    """Break a node: ``Unreachable`` stops its kubelet, ``NotReady`` makes it report not ready."""
    return Patch(Ref.of(node), {"metadata": {"annotations": {FAILURE_ANNOTATION: mode}}})


def recover_node(node: Mapping[str, Any]) -> Patch:
    """Bring a node back, however it failed (injected, or its Ready condition set by hand)."""
    return Patch(Ref.of(node), {"metadata": {"annotations": {FAILURE_ANNOTATION: RECOVERED}}})


def pool_nodes(nodes: Sequence[Obj], pool: str) -> list[Obj]:
    """The nodes of one node pool (a TPU slice fails and is repaired as a whole)."""
    return [n for n in nodes if labels_of(n).get(POOL_LABEL) == pool]


def _mode(node: Mapping[str, Any]) -> str:
    """``NotReady``, ``Unreachable``, ``Recovered`` or ``""`` (nothing injected)."""
    mode = str(annotations_of(node).get(FAILURE_ANNOTATION, ""))
    return mode if mode in (*_FAILED_READY, RECOVERED, "") else "Unreachable"


def kubelet_posts(node: Mapping[str, Any]) -> bool:
    """Whether the simulated kubelet writes this node's status (and so its heartbeats)."""
    mode = _mode(node)
    return mode in ("NotReady", RECOVERED) or (mode == "" and ready_status(node) == "True")


def _failed_conditions(node: Mapping[str, Any], mode: str, now: datetime) -> list[Obj]:
    status, reason, message = _FAILED_READY[mode]
    stamp = rfc3339(now)
    out = []
    for cond in (node.get("status") or {}).get("conditions") or ():
        new = dict(cond)
        if cond["type"] == "Ready":
            new.update(status=status, reason=reason, message=message)
        elif mode == "Unreachable":
            # The lifecycle controller marks every condition Unknown once heartbeats stop.
            new.update(status="Unknown", reason="NodeStatusUnknown", message=message)
        if new.get("status") != cond.get("status"):
            new["lastTransitionTime"] = stamp
        if mode == "NotReady":
            new["lastHeartbeatTime"] = stamp
        out.append(new)
    return out


def _healthy_conditions(node: Mapping[str, Any], now: datetime) -> list[Obj]:
    """What a live kubelet posts; conditions of other types (someone else's) are kept."""
    current = {c["type"]: c for c in (node.get("status") or {}).get("conditions") or ()}
    stamp = rfc3339(now)
    out = []
    for healthy in ready_conditions(now):
        before = current.pop(healthy["type"], None)
        if before is not None and before.get("status") == healthy["status"]:
            healthy["lastTransitionTime"] = before.get("lastTransitionTime", stamp)
        out.append(healthy)
    return out + list(current.values())


def _conditions(node: Mapping[str, Any], now: datetime) -> list[Obj] | None:
    """The node's new condition list, or ``None`` when the kubelet has nothing to write yet."""
    mode = _mode(node)
    if mode == RECOVERED:
        return _healthy_conditions(node, now)
    if not kubelet_posts(node) and mode != "Unreachable":
        return None  # Ready was turned False or Unknown by someone else: leave it as set
    if mode in _FAILED_READY:
        wanted = _FAILED_READY[mode]
        current = condition(node, "Ready") or {}
        changed = (current.get("status"), current.get("reason")) != wanted[:2]
        if changed or (mode == "NotReady" and _heartbeat_due(node, now)):
            return _failed_conditions(node, mode, now)
        return None
    return _healthy_conditions(node, now) if _heartbeat_due(node, now) else None


def _heartbeat_due(node: Mapping[str, Any], now: datetime) -> bool:
    beat = (condition(node, "Ready") or {}).get("lastHeartbeatTime")
    return beat is None or now - parse_rfc3339(str(beat)) >= timedelta(seconds=HEARTBEAT_SECONDS)


def _taints(node: Mapping[str, Any], ready: str, now: datetime) -> list[Obj] | None:
    """The node's taints for Ready status ``ready``, or ``None`` when they are already right."""
    spec = node.get("spec") or {}
    current: list[Obj] = list(spec.get("taints") or ())
    wanted: list[tuple[str, str]] = []
    if ready in _CONDITION_TAINT:
        key = _CONDITION_TAINT[ready]
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


def _status_change(node: Mapping[str, Any], ready: str) -> list[Action]:
    """NodeReady/NodeNotReady when the node enters or leaves a failed Ready status, judged by its
    condition taints, so that a Ready condition set by someone else is announced as well."""
    tainted = any(t["key"] in _CONDITION_TAINT.values() and t["effect"] == "NoExecute"
                  for t in (node.get("spec") or {}).get("taints") or ())  # fmt: skip
    if tainted == (ready in _CONDITION_TAINT):
        return []
    ref = Ref.of(node)
    word = "NodeNotReady" if ready in _CONDITION_TAINT else "NodeReady"
    return [Event(ref, word, f"Node {ref.name} status is now: {word}", "Normal", "node-controller")]


def reconcile_nodes(nodes: Sequence[Obj], now: datetime) -> list[Action]:
    """Heartbeats, Ready transitions (with NodeReady/NodeNotReady events) and condition taints."""
    actions: list[Action] = []
    for node in sorted(nodes, key=lambda n: str(meta(n)["name"])):
        ref = Ref.of(node)
        after = ready_status(node)
        conditions = _conditions(node, now)
        if conditions is not None:
            actions.append(Patch(ref, {"status": {"conditions": conditions}}, "status"))
            after = next((str(c["status"]) for c in conditions if c["type"] == "Ready"), "Unknown")
        actions += _status_change(node, after)
        taints = _taints(node, after, now)
        if taints is not None:
            actions.append(Patch(ref, {"spec": {"taints": taints or None}}))
        if _mode(node) == RECOVERED:
            actions.append(Patch(ref, {"metadata": {"annotations": {FAILURE_ANNOTATION: None}}}))
    return actions


def next_heartbeat(nodes: Sequence[Obj]) -> datetime | None:
    """When the earliest live kubelet is due to post its heartbeat."""
    beats = []
    for node in nodes:
        beat = (condition(node, "Ready") or {}).get("lastHeartbeatTime")
        if beat and kubelet_posts(node):
            beats.append(parse_rfc3339(str(beat)) + timedelta(seconds=HEARTBEAT_SECONDS))
    return min(beats, default=None)
