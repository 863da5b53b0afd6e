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


def test_pods_on_a_lost_node_fail_with_disruption_target() -> None:
    p = _step(pod("p", node_name="n"), [node("n")])
    lost = _step(p, [node("n", ready=False)])
    assert lost["status"]["phase"] == "Failed"
    assert lost["status"]["reason"] == "NodeLost"
    disruption = [c for c in lost["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert disruption[0]["reason"] == "DeletionByTaintManager"
    gone = _step(p, [])
    assert [c["reason"] for c in gone["status"]["conditions"]
            if c["type"] == "DisruptionTarget"] == ["DeletionByPodGC"]  # fmt: skip


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
