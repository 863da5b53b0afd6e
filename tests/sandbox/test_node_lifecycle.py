from __future__ import annotations

from datetime import timedelta
from typing import Any

from kq.sandbox.cluster.actions import Event, Patch
from kq.sandbox.cluster.node_lifecycle import (
    HEARTBEAT_SECONDS,
    fail_node,
    next_heartbeat,
    pool_nodes,
    reconcile_nodes,
    recover_node,
)
from kq.sandbox.cluster.podinfo import condition
from tests.sandbox.builders import NOW, node
from tests.sandbox.world import merge_patch


def _apply(n: dict[str, Any], seconds: float = 0) -> tuple[dict[str, Any], list[str]]:
    actions = reconcile_nodes([n], NOW + timedelta(seconds=seconds))
    for action in actions:
        if isinstance(action, Patch):
            n = merge_patch(n, action.patch)
    return n, [a.reason for a in actions if isinstance(a, Event)]


def test_healthy_node_heartbeats_only_when_due() -> None:
    n = node("n")
    assert reconcile_nodes([n], NOW + timedelta(seconds=1)) == []
    later, events = _apply(n, HEARTBEAT_SECONDS)
    assert events == []
    beat = condition(later, "Ready")["lastHeartbeatTime"]  # type: ignore[index]
    assert beat.endswith(":40Z")


def test_unreachable_then_recovered() -> None:
    n = merge_patch(node("n"), fail_node(node("n")).patch)
    failed, events = _apply(n, 5)
    assert events == ["NodeNotReady"]
    ready = condition(failed, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("Unknown", "NodeStatusUnknown")
    taints = {(t["key"], t["effect"]) for t in failed["spec"]["taints"]}
    assert taints == {("node.kubernetes.io/unreachable", "NoSchedule"),
                      ("node.kubernetes.io/unreachable", "NoExecute")}  # fmt: skip
    assert reconcile_nodes([failed], NOW + timedelta(seconds=500)) == []  # no heartbeats

    healed = merge_patch(failed, recover_node(failed).patch)
    healed, events = _apply(healed, 600)
    assert events == ["NodeReady"]
    assert condition(healed, "Ready")["status"] == "True"  # type: ignore[index]
    assert "taints" not in healed["spec"]


def test_not_ready_mode_and_cordon() -> None:
    n = merge_patch(node("n"), fail_node(node("n"), "NotReady").patch)
    n["spec"]["unschedulable"] = True
    n, _ = _apply(n)
    assert condition(n, "Ready")["status"] == "False"  # type: ignore[index]
    keys = sorted((t["key"], t["effect"]) for t in n["spec"]["taints"])
    assert keys == [("node.kubernetes.io/not-ready", "NoExecute"),
                    ("node.kubernetes.io/not-ready", "NoSchedule"),
                    ("node.kubernetes.io/unschedulable", "NoSchedule")]  # fmt: skip


def test_pool_nodes_selects_by_pool_label() -> None:
    nodes = [node("a", labels={"cloud.google.com/gke-nodepool": "p1"}),
             node("b", labels={"cloud.google.com/gke-nodepool": "p2"})]  # fmt: skip
    assert [n["metadata"]["name"] for n in pool_nodes(nodes, "p2")] == ["b"]


def test_next_heartbeat_skips_unreachable_nodes() -> None:
    assert next_heartbeat([node("a")]) == NOW + timedelta(seconds=HEARTBEAT_SECONDS)
    gone = merge_patch(node("b"), fail_node(node("b")).patch)
    assert next_heartbeat([gone]) is None
