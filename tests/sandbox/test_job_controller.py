from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kq.sandbox.cluster.actions import Create, Delete, Event, Patch
from kq.sandbox.cluster.clock import ManualClock
from kq.sandbox.cluster.job_controller import (
    TRACKING_FINALIZER,
    deadline,
    format_indexes,
    parse_indexes,
    reconcile_job,
)
from kq.sandbox.cluster.node_lifecycle import fail_node
from kq.sandbox.cluster.nodes import node_objects
from kq.sandbox.cluster.podinfo import condition, labels_of
from kq.sandbox.cluster.profiles import load_profile
from tests.harness import present
from tests.sandbox.world import World


def _job(name: str = "sample-job", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app": "demo"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox",
                                    "command": ["sh", "-c", "sleep 30"],
                                    "resources": {"requests": {"cpu": "100m"}}}],
                },
            },
            **spec,
        },
    }  # fmt: skip


@pytest.fixture
def world() -> World:
    w = World()
    for n in node_objects(load_profile("s4"), w.clock.now()):
        w.add(n)
    return w


def _reasons(w: World, name: str) -> list[str]:
    return [e.reason for e in w.events if e.regarding.kind == "Job" and e.regarding.name == name]


def test_indexed_pods_carry_names_labels_and_index(world: World) -> None:
    job = world.add(_job(parallelism=2, completions=2, completionMode="Indexed"))
    actions = reconcile_job(job, [], world.clock.now())
    pods = [a.obj for a in actions if isinstance(a, Create)]
    assert [p["metadata"]["name"][:-5] for p in pods] == ["sample-job-0-", "sample-job-1-"]
    first = pods[0]
    uid = job["metadata"]["uid"]
    assert labels_of(first) == {
        "app": "demo",
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "sample-job",
        "controller-uid": uid,
        "job-name": "sample-job",
        "batch.kubernetes.io/job-completion-index": "0",
    }
    assert first["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "0"
    assert first["metadata"]["finalizers"] == [TRACKING_FINALIZER]
    owner = first["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["controller"], owner["uid"]) == ("Job", True, uid)
    assert first["spec"]["containers"][0]["env"][0]["name"] == "JOB_COMPLETION_INDEX"
    assert first["spec"]["hostname"] == "sample-job-0"
    created = [a.message for a in actions if isinstance(a, Event)]
    assert created == [f"Created pod: {p['metadata']['name']}" for p in pods]
    assert reconcile_job(job, [], world.clock.now()) == actions  # deterministic


def test_runs_to_completion(world: World) -> None:
    world.add(_job(parallelism=2, completions=3))
    world.run(lambda w: condition(w.get("Job", "sample-job"), "Complete") is not None)
    job = world.get("Job", "sample-job")
    status = job["status"]
    assert status["succeeded"] == 3
    assert "failed" not in status
    assert present(condition(job, "SuccessCriteriaMet"))["reason"] == "CompletionsReached"
    assert status["completionTime"] == "2026-01-01T00:01:00Z"  # two waves of 30 s
    assert _reasons(world, "sample-job").count("SuccessfulCreate") == 3
    assert _reasons(world, "sample-job")[-1] == "Completed"
    assert all(not p["metadata"].get("finalizers") for p in world.of_kind("Pod"))


def test_backoff_limit_exceeded(world: World) -> None:
    job = _job(parallelism=2, completions=2, completionMode="Indexed")
    job["spec"]["template"]["metadata"]["annotations"] = {"kq.dev/exit-code": "1"}
    world.add(job)
    world.run(lambda w: condition(w.get("Job", "sample-job"), "Failed") is not None)
    job = world.get("Job", "sample-job")
    assert present(condition(job, "FailureTarget"))["reason"] == "BackoffLimitExceeded"
    assert present(condition(job, "Failed"))["reason"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] == 2
    assert "BackoffLimitExceeded" in _reasons(world, "sample-job")


def test_suspend_and_resume_do_not_spend_the_backoff_limit(world: World) -> None:
    world.add(_job(suspend=True))
    world.settle()
    job = world.get("Job", "sample-job")
    assert present(condition(job, "Suspended"))["reason"] == "JobSuspended"
    assert world.of_kind("Pod") == []

    world.apply(
        [
            Patch(
                _ref(job),
                {
                    "spec": {
                        "suspend": False,
                        "template": {
                            "spec": {
                                "nodeSelector": {"cloud.google.com/gke-nodepool": "spot-pool"},
                                "tolerations": [
                                    {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
                                ],
                            }
                        },
                    }
                },
            )
        ]
    )
    world.settle()  # fmt: skip
    pod = world.of_kind("Pod")[0]
    assert pod["spec"]["nodeSelector"] == {"cloud.google.com/gke-nodepool": "spot-pool"}
    assert pod["spec"]["nodeName"].startswith("gke-spot-pool-")
    assert world.get("Job", "sample-job")["status"]["startTime"] == "2026-01-01T00:00:00Z"

    world.clock.advance(5)
    world.apply([Patch(_ref(job), {"spec": {"suspend": True}})])
    world.settle()
    job = world.get("Job", "sample-job")
    assert world.of_kind("Pod") == []
    assert "failed" not in job["status"]
    assert "startTime" not in job["status"]
    world.clock.advance(5)
    world.apply([Patch(_ref(job), {"spec": {"suspend": False}})])
    world.run(lambda w: condition(w.get("Job", "sample-job"), "Complete") is not None)
    # kube's job controller creates the pods before it flips Suspended: SuccessfulCreate first.
    assert _reasons(world, "sample-job") == ["Suspended", "SuccessfulCreate", "Resumed",
                                             "SuccessfulDelete", "Suspended", "SuccessfulCreate",
                                             "Resumed", "Completed"]  # fmt: skip
    assert world.get("Job", "sample-job")["status"]["startTime"] == "2026-01-01T00:00:10Z"


def test_quiescent_job_yields_no_actions(world: World) -> None:
    world.add(_job())
    world.settle()
    job = world.get("Job", "sample-job")
    assert reconcile_job(job, world.of_kind("Pod"), world.clock.now()) == []


def test_deleting_job_releases_pod_finalizers(world: World) -> None:
    world.add(_job())
    world.settle()
    world.apply([Delete(_ref(world.get("Job", "sample-job")))])
    world.settle()
    assert world.of_kind("Pod") == []
    assert world.find("Job", "sample-job") is None


def test_completed_indexes_round_trip() -> None:
    assert parse_indexes("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    assert format_indexes({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    assert format_indexes(set()) == ""


def _ref(obj: dict[str, Any]) -> Any:
    from kq.sandbox.cluster.actions import Ref

    return Ref.of(obj)


def _exit_rule(action: str, code: int) -> dict[str, Any]:
    return {"action": action, "onExitCodes": {"operator": "In", "values": [code]}}


def test_pod_failure_policy_fail_job(world: World) -> None:
    job = _job(podFailurePolicy={"rules": [_exit_rule("FailJob", 3)]}, backoffLimit=6)
    job["spec"]["template"]["metadata"]["annotations"] = {"kq.dev/exit-code": "3"}
    world.add(job)
    world.run(lambda w: condition(w.get("Job", "sample-job"), "Failed") is not None)
    failed = condition(world.get("Job", "sample-job"), "Failed")
    assert failed is not None
    assert failed["reason"] == "PodFailurePolicy"
    assert "failed with exit code 3 matching FailJob rule at index 0" in failed["message"]
    assert _reasons(world, "sample-job").count("SuccessfulCreate") == 1  # no retries


def test_pod_failure_policy_ignore_spends_no_backoff(world: World) -> None:
    world.add(
        _job(
            podFailurePolicy={
                "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
            }
        )
    )
    world.settle()  # fmt: skip
    pod = world.of_kind("Pod")[0]
    node = world.get("Node", pod["spec"]["nodeName"])
    world.apply([fail_node(node)])
    # The taint manager evicts the pod once its default 300 s toleration has run out.
    world.run(lambda w: _reasons(w, "sample-job").count("SuccessfulCreate") == 2)
    job = world.get("Job", "sample-job")
    assert condition(job, "Failed") is None
    assert "failed" not in job["status"]
    world.run(lambda w: condition(w.get("Job", "sample-job"), "Complete") is not None)


def test_active_deadline_fails_the_job(world: World) -> None:
    world.add(_job(activeDeadlineSeconds=10))
    world.settle()
    job = world.get("Job", "sample-job")
    assert deadline(job) == world.clock.now() + timedelta(seconds=10)
    world.clock.advance(10)
    world.settle()
    failed = condition(world.get("Job", "sample-job"), "Failed")
    assert failed is not None
    assert failed["reason"] == "DeadlineExceeded"
    assert world.get("Job", "sample-job")["status"]["failed"] == 1


def test_on_failure_restarts_spend_the_backoff_limit(world: World) -> None:
    job = _job(backoffLimit=2)
    template = job["spec"]["template"]
    template["spec"]["restartPolicy"] = "OnFailure"
    template["metadata"]["annotations"] = {"kq.dev/exit-code": "1"}
    world.add(job)
    world.run(lambda w: condition(w.get("Job", "sample-job"), "Failed") is not None)
    failed = condition(world.get("Job", "sample-job"), "Failed")
    assert failed is not None
    assert failed["reason"] == "BackoffLimitExceeded"
    assert world.clock.now() == ManualClock().now() + timedelta(seconds=60)  # two 30 s runs
    assert _reasons(world, "sample-job").count("SuccessfulCreate") == 1
