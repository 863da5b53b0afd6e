from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kq.sandbox.cluster.actions import Event, Patch
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.node_lifecycle import (
    HEARTBEAT_SECONDS,
    fail_node,
    next_heartbeat,
    pool_nodes,
    reconcile_nodes,
    recover_node,
)
from kq.sandbox.cluster.podinfo import condition
from tests.harness import present
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
    beat = present(condition(later, "Ready"))["lastHeartbeatTime"]
    assert beat == rfc3339(NOW + timedelta(seconds=HEARTBEAT_SECONDS))


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
    assert present(condition(healed, "Ready"))["status"] == "True"
    assert "taints" not in healed["spec"]


def test_not_ready_mode_and_cordon() -> None:
    n = merge_patch(node("n"), fail_node(node("n"), "NotReady").patch)
    n["spec"]["unschedulable"] = True
    n, _ = _apply(n)
    assert present(condition(n, "Ready"))["status"] == "False"
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


def _by_hand(n: dict[str, Any], status: str) -> dict[str, Any]:
    """What `kubectl patch node --subresource status` setting Ready would leave."""
    conditions = [dict(c) for c in n["status"]["conditions"]]
    conditions[-1].update(status=status, reason="ManualFailure", message="set by hand")
    patched: dict[str, Any] = merge_patch(n, {"status": {"conditions": conditions}})
    return patched


def _taint_keys(n: dict[str, Any]) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in n["spec"].get("taints") or ()}


@pytest.mark.parametrize(
    ("status", "key"),
    [("False", "node.kubernetes.io/not-ready"), ("Unknown", "node.kubernetes.io/unreachable")],
)
def test_a_ready_condition_set_by_hand_taints_and_is_left_alone(status: str, key: str) -> None:
    down, events = _apply(_by_hand(node("n"), status), 5)
    assert events == ["NodeNotReady"]
    assert _taint_keys(down) == {(key, "NoSchedule"), (key, "NoExecute")}
    no_execute = next(t for t in down["spec"]["taints"] if t["effect"] == "NoExecute")
    assert no_execute["timeAdded"] == "2026-01-01T00:00:05Z"
    assert "timeAdded" not in next(t for t in down["spec"]["taints"] if t["effect"] == "NoSchedule")
    later, _ = _apply(down, 3600)  # no heartbeat overwrites it
    assert present(condition(later, "Ready"))["reason"] == "ManualFailure"
    assert next_heartbeat([later]) is None

    back, events = _apply(_by_hand(later, "True"), 3700)  # Ready set True again by hand
    assert events == ["NodeReady"]
    assert _taint_keys(back) == set()
    assert next_heartbeat([back]) is not None


def test_recover_heals_a_node_failed_by_hand_and_drops_its_mark() -> None:
    down, _ = _apply(_by_hand(node("n"), "Unknown"), 5)
    marked = merge_patch(down, recover_node(down).patch)
    healed, events = _apply(marked, 10)
    assert events == ["NodeReady"]
    assert {c["type"]: c["status"] for c in healed["status"]["conditions"]} == {
        "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False",
        "Ready": "True"}  # fmt: skip
    assert "kq.dev/simulated-failure" not in healed["metadata"]["annotations"]
    assert "taints" not in healed["spec"]
    assert reconcile_nodes([healed], NOW + timedelta(seconds=11)) == []


def test_unreachable_recovery_restores_every_condition() -> None:
    n = merge_patch(node("n"), fail_node(node("n")).patch)
    failed, _ = _apply(n, 5)
    assert {c["status"] for c in failed["status"]["conditions"]} == {"Unknown"}
    healed, _ = _apply(merge_patch(failed, recover_node(failed).patch), 50)
    pressure = condition(healed, "MemoryPressure")
    assert pressure is not None
    assert (pressure["status"], pressure["reason"]) == ("False", "KubeletHasSufficientMemory")
    assert pressure["lastTransitionTime"] == "2026-01-01T00:00:50Z"


def test_not_ready_then_unreachable_swaps_the_taints() -> None:
    n, _ = _apply(merge_patch(node("n"), fail_node(node("n"), "NotReady").patch), 5)
    n, events = _apply(merge_patch(n, fail_node(n, "Unreachable").patch), 60)
    assert events == []  # still not ready: no new event
    assert _taint_keys(n) == {("node.kubernetes.io/unreachable", "NoSchedule"),
                              ("node.kubernetes.io/unreachable", "NoExecute")}  # fmt: skip
