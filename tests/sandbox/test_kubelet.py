from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kq.sandbox.cluster.actions import Delete, Event, Patch
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.kubelet import next_wakeup, reconcile_pods, run_seconds
from tests.sandbox.builders import NOW, node, pod
from tests.sandbox.world import merge_patch


def _step(p: dict[str, Any], nodes: list[dict[str, Any]], seconds: float = 0) -> dict[str, Any]:
    actions = reconcile_pods([p], nodes, NOW + timedelta(seconds=seconds))
    for action in actions:
        if isinstance(action, Patch):
            p = merge_patch(p, action.patch)
    return p


@pytest.mark.parametrize(
    ("container", "annotations", "seconds"),
    [
        ({"command": ["bash", "-c", "pip install x\npython -c 'y'\nsleep 60\n"]}, {}, 60),
        ({"command": ["sh", "-c"], "args": ["echo hi; sleep 2m"]}, {}, 120),
        ({"image": "gcr.io/k8s-staging-perf-tests/sleep:v0.0.3", "args": ["120s"]}, {}, 120),
        ({"command": ["sleep", "30"]}, {"kq.dev/run-seconds": "7"}, 7),
        ({"command": ["python", "train.py"]}, {}, 5),
    ],
)
def test_run_seconds(
    container: dict[str, Any], annotations: dict[str, str], seconds: float
) -> None:
    p = pod("p", annotations=annotations)
    p["spec"]["containers"][0].update(container)
    assert run_seconds(p) == seconds


def test_pod_runs_then_completes() -> None:
    p = pod("p", node_name="n", annotations={"kq.dev/run-seconds": "10"}, restartPolicy="Never")
    actions = reconcile_pods([p], [node("n")], NOW)
    assert {a.reason for a in actions if isinstance(a, Event)} == {"Pulled", "Created", "Started"}
    p = _step(p, [node("n")])
    status = p["status"]
    assert status["phase"] == "Running"
    assert status["startTime"] == rfc3339(NOW)
    assert status["podIP"].startswith("10.64.")
    assert status["containerStatuses"][0]["ready"] is True
    assert status["containerStatuses"][0]["restartCount"] == 0
    ready = {c["type"]: c["status"] for c in status["conditions"]}
    assert set(ready) == {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                          "PodScheduled"}  # fmt: skip
    assert set(ready.values()) == {"True"}
    assert next_wakeup([p]) == NOW + timedelta(seconds=10)
    assert reconcile_pods([p], [node("n")], NOW + timedelta(seconds=9)) == []
    p = _step(p, [node("n")], 10)
    assert p["status"]["phase"] == "Succeeded"
    terminated = p["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert reconcile_pods([p], [node("n")], NOW + timedelta(seconds=99)) == []


def test_exit_code_annotation_fails_the_pod() -> None:
    notes = {"kq.dev/run-seconds": "1", "kq.dev/exit-code": "3"}
    p = pod("p", node_name="n", annotations=notes, restartPolicy="Never")
    p = _step(_step(p, [node("n")]), [node("n")], 1)
    assert p["status"]["phase"] == "Failed"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Error"


@pytest.mark.parametrize(("policy", "code"), [("OnFailure", 3), ("Always", 0)])
def test_containers_restart_in_place(policy: str, code: int) -> None:
    notes = {"kq.dev/run-seconds": "5", "kq.dev/exit-code": str(code)}
    p = _step(pod("p", node_name="n", annotations=notes, restartPolicy=policy), [node("n")])
    p = _step(p, [node("n")], 5)
    assert p["status"]["phase"] == "Running"
    container = p["status"]["containerStatuses"][0]
    assert container["restartCount"] == 1
    assert container["lastState"]["terminated"]["exitCode"] == code
    assert container["state"]["running"]["startedAt"] == rfc3339(NOW + timedelta(seconds=5))
    assert next_wakeup([p]) == NOW + timedelta(seconds=10)


def test_on_failure_pod_that_succeeds_completes() -> None:
    notes = {"kq.dev/run-seconds": "5"}
    p = _step(pod("p", node_name="n", annotations=notes, restartPolicy="OnFailure"), [node("n")])
    assert _step(p, [node("n")], 5)["status"]["phase"] == "Succeeded"


def _unreachable(name: str) -> dict[str, Any]:
    n = node(name)
    n["status"]["conditions"][-1]["status"] = "Unknown"
    return n


def test_a_node_without_kubelet_freezes_its_pods() -> None:
    running = _step(pod("p", node_name="n", annotations={"kq.dev/run-seconds": "10"}), [node("n")])
    assert reconcile_pods([running], [_unreachable("n")], NOW + timedelta(seconds=60)) == []
    assert reconcile_pods([pod("q", node_name="n")], [_unreachable("n")], NOW) == []
    assert reconcile_pods([running], [], NOW + timedelta(seconds=60)) == []  # pod GC's business


def test_a_not_ready_node_runs_its_pods_but_starts_none() -> None:
    notes = {"kq.dev/run-seconds": "10"}
    running = _step(pod("p", node_name="n", annotations=notes, restartPolicy="Never"), [node("n")])
    down = [node("n", ready=False)]
    assert reconcile_pods([pod("q", node_name="n")], down, NOW) == []
    assert _step(running, down, 10)["status"]["phase"] == "Succeeded"


def test_deleting_a_pod_on_a_dead_node_still_removes_it() -> None:
    """The sandbox stands in for the repair that lets kube finish such a deletion."""
    p = _step(pod("p", node_name="n"), [node("n")])
    p["metadata"]["deletionTimestamp"] = rfc3339(NOW)
    p["metadata"]["deletionGracePeriodSeconds"] = 30
    actions = reconcile_pods([p], [_unreachable("n")], NOW)
    assert isinstance(actions[-1], Delete)
    assert isinstance(actions[0], Patch)
    assert actions[0].patch["status"]["phase"] == "Failed"


@pytest.mark.parametrize(("default", "seconds"), [(5.0, 5), (3600.0, 3600)])
def test_the_profile_default_applies_when_nothing_declares_a_run_time(
    default: float, seconds: float
) -> None:
    p = pod("p", node_name="n", restartPolicy="Never")
    p["spec"]["containers"][0]["command"] = ["python3", "MaxText/train.py", "steps=300"]
    assert run_seconds(p, default) == seconds
    started = _step(p, [node("n")])
    assert next_wakeup([started], default) == NOW + timedelta(seconds=seconds)
    assert reconcile_pods([started], [node("n")], NOW + timedelta(seconds=seconds - 1),
                          default) == []  # fmt: skip
    (end,) = reconcile_pods([started], [node("n")], NOW + timedelta(seconds=seconds), default)
    assert isinstance(end, Patch)
    assert end.patch["status"]["phase"] == "Succeeded"
    notes = {"kq.dev/run-seconds": "7"}
    assert run_seconds(pod("a", annotations=notes), default) == 7  # the annotation wins


def test_graceful_deletion_kills_then_deletes() -> None:
    p = _step(pod("p", node_name="n"), [node("n")])
    p["metadata"]["deletionTimestamp"] = rfc3339(NOW)
    p["metadata"]["deletionGracePeriodSeconds"] = 30
    actions = reconcile_pods([p], [node("n")], NOW)
    assert isinstance(actions[0], Patch)
    assert actions[0].patch["status"]["phase"] == "Failed"
    assert isinstance(actions[-1], Delete)
    assert actions[-1].grace_period_seconds == 0
    p["metadata"]["deletionGracePeriodSeconds"] = 0
    assert reconcile_pods([p], [node("n")], NOW) == []


def test_unbound_pods_are_left_alone() -> None:
    assert reconcile_pods([pod("p")], [node("n")], NOW) == []
