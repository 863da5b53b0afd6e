from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import pytest

from kq.sandbox.cluster.actions import Create, Delete, Event, Patch, Ref
from kq.sandbox.cluster.jobset_controller import reconcile_jobset
from kq.sandbox.cluster.jobset_objects import build_job, job_key
from kq.sandbox.cluster.nodes import node_objects
from kq.sandbox.cluster.podinfo import condition, labels_of
from kq.sandbox.cluster.profiles import load_profile
from tests.harness import present
from tests.sandbox.builders import NOW
from tests.sandbox.manifests import s1_jobset
from tests.sandbox.world import World


def _with_uid(obj: dict[str, Any], uid: str = "js-uid") -> dict[str, Any]:
    obj["metadata"].update(uid=uid, namespace="default")
    return obj


def _failed_job(js: dict[str, Any], index: int, reason: str = "BackoffLimitExceeded") -> Any:
    job = build_job(js, js["spec"]["replicatedJobs"][0], index)
    job["metadata"]["uid"] = f"job-{index}"
    job["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": reason,
                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]}  # fmt: skip
    return job


def _status(actions: list[Any]) -> dict[str, Any]:
    patch = actions[0]
    assert isinstance(patch, Patch)
    assert patch.subresource == "status"
    status: dict[str, Any] = patch.patch["status"]
    return status


def test_child_job_names_keys_and_exclusive_annotation() -> None:
    js = _with_uid(s1_jobset("multislice-2slice", 2))
    actions = reconcile_jobset(js, [], NOW)
    jobs = [a.obj for a in actions if isinstance(a, Create)]
    assert [j["metadata"]["name"] for j in jobs] == ["multislice-2slice-slice-0",
                                                     "multislice-2slice-slice-1"]  # fmt: skip
    labels = labels_of(jobs[1])
    expected_key = hashlib.sha1(b"default/multislice-2slice-slice-1").hexdigest()
    assert (
        labels["jobset.sigs.k8s.io/job-key"]
        == expected_key
        == job_key("default", "multislice-2slice-slice-1")
    )
    assert labels["jobset.sigs.k8s.io/jobset-name"] == "multislice-2slice"
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "slice"
    assert labels["jobset.sigs.k8s.io/job-index"] == "1"
    assert labels["jobset.sigs.k8s.io/replicatedjob-replicas"] == "2"
    assert labels["jobset.sigs.k8s.io/global-replicas"] == "2"
    assert labels["jobset.sigs.k8s.io/restart-attempt"] == "0"
    pod_meta = jobs[1]["spec"]["template"]["metadata"]
    assert pod_meta["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"] == (
        "cloud.google.com/gke-nodepool"
    )
    assert pod_meta["labels"]["jobset.sigs.k8s.io/job-key"] == expected_key
    assert jobs[1]["spec"]["completionMode"] == "Indexed"
    assert jobs[1]["metadata"]["ownerReferences"][0]["uid"] == "js-uid"
    assert _status(actions)["replicatedJobsStatus"] == [
        {"name": "slice", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    ]


def test_suspend_then_resume_carries_kueue_edits_into_jobs() -> None:
    w = World()
    for n in node_objects(load_profile("s1"), w.clock.now()):
        w.add(n)
    w.add(s1_jobset("multislice-1slice", 1, suspend=True))
    w.settle()
    job = w.get("Job", "multislice-1slice-slice-0")
    assert job["spec"]["suspend"] is True
    assert w.of_kind("Pod") == []
    js = w.get("JobSet", "multislice-1slice")
    assert present(condition(js, "Suspended"))["reason"] == "SuspendedJobs"

    # What Kueue does on admission: edit the pod template, then unsuspend.
    template_patch = {
        "metadata": {"labels": {"kueue.x-k8s.io/podset": "slice"}},
        "spec": {"nodeSelector": {"cloud.google.com/gke-nodepool": "nodepool3"}},
    }
    w.apply([Patch(Ref.of(js), {"spec": {"suspend": False, "replicatedJobs": [
        {**js["spec"]["replicatedJobs"][0], "template": {"spec": {
            **js["spec"]["replicatedJobs"][0]["template"]["spec"],
            "template": _merge(js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"],
                               template_patch)}}}]}})])  # fmt: skip
    w.settle()
    pods = w.of_kind("Pod")
    assert len(pods) == 2
    assert {p["spec"]["nodeName"] for p in pods} == {"gke-nodepool3-0", "gke-nodepool3-1"}
    assert all(labels_of(p)["kueue.x-k8s.io/podset"] == "slice" for p in pods)
    js = w.get("JobSet", "multislice-1slice")
    assert present(condition(js, "Suspended"))["status"] == "False"
    reasons = [e.reason for e in w.events if e.regarding.kind == "JobSet"]
    assert reasons == ["SuspendedJobs", "ResumeJobs"]

    w.apply([Patch(Ref.of(js), {"spec": {"suspend": True}})])
    w.settle()
    assert w.of_kind("Pod") == []
    assert w.get("Job", "multislice-1slice-slice-0")["spec"]["suspend"] is True


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    from tests.sandbox.world import merge_patch

    merged: dict[str, Any] = merge_patch(base, extra)
    return merged


def test_no_failure_policy_fails_on_first_job_failure() -> None:
    js = _with_uid(s1_jobset("x", 2))
    del js["spec"]["failurePolicy"]
    actions = reconcile_jobset(js, [_failed_job(js, 0)], NOW)
    status = _status(actions)
    assert status["terminalState"] == "Failed"
    assert status["conditions"][0]["reason"] == "FailedJobs"
    warning = next(a for a in actions if isinstance(a, Event))
    assert (warning.reason, warning.type) == ("FailedJobs", "Warning")


def test_restart_counts_and_recreates_jobs() -> None:
    js = _with_uid(s1_jobset("x", 2))
    jobs = [_failed_job(js, 0), build_job(js, js["spec"]["replicatedJobs"][0], 1)]
    jobs[1]["metadata"]["uid"] = "job-1"
    status = _status(reconcile_jobset(js, jobs, NOW))
    assert (status["restarts"], status["restartsCountTowardsMax"]) == (1, 1)
    assert status["conditions"][0]["reason"] == "DefaultFailurePolicy"

    js["status"] = status
    actions = reconcile_jobset(js, jobs, NOW)
    deletes = [a for a in actions if isinstance(a, Delete)]
    assert [d.ref.name for d in deletes] == ["x-slice-0", "x-slice-1"]
    assert {d.propagation for d in deletes} == {"Foreground"}
    assert not [a for a in actions if isinstance(a, Create)]  # names still taken by old Jobs


@pytest.mark.parametrize(("strategy", "created"), [("Recreate", ["x-slice-1"]),
                                                   ("BlockingRecreate", [])])  # fmt: skip
def test_recreate_versus_blocking_recreate(strategy: str, created: list[str]) -> None:
    js = _with_uid(s1_jobset("x", 2))
    js["spec"]["failurePolicy"]["restartStrategy"] = strategy
    old = build_job(js, js["spec"]["replicatedJobs"][0], 0)  # attempt 0, still being deleted
    old["metadata"].update(uid="old", deletionTimestamp="2026-01-01T00:00:00Z")
    js["status"] = {"restarts": 1, "restartsCountTowardsMax": 1}
    actions = reconcile_jobset(js, [old], NOW)
    names = [a.obj["metadata"]["name"] for a in actions if isinstance(a, Create)]
    assert names == created
    for action in actions:
        if isinstance(action, Create):
            assert labels_of(action.obj)["jobset.sigs.k8s.io/restart-attempt"] == "1"


def test_max_restarts_reached() -> None:
    js = _with_uid(s1_jobset("x", 1))
    js["status"] = {"restarts": 4, "restartsCountTowardsMax": 4}
    job = _failed_job(js, 0)
    job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = "4"
    status = _status(reconcile_jobset(js, [job], NOW))
    assert status["terminalState"] == "Failed"
    assert status["conditions"][0]["reason"] == "ReachedMaxRestarts"


def test_failure_policy_rules() -> None:
    js = _with_uid(s1_jobset("x", 1))
    js["spec"]["failurePolicy"]["rules"] = [
        {
            "action": "RestartJobSetAndIgnoreMaxRestarts",
            "onJobFailureReasons": ["PodFailurePolicy"],
        },
        {"name": "stop", "action": "FailJobSet", "onJobFailureReasons": ["DeadlineExceeded"]},
    ]
    free = _status(reconcile_jobset(js, [_failed_job(js, 0, "PodFailurePolicy")], NOW))
    assert free["restarts"] == 1
    assert "restartsCountTowardsMax" not in free
    assert free["conditions"][0]["reason"] == "FailurePolicy_failurePolicyRule0"
    stop = _status(reconcile_jobset(js, [_failed_job(js, 0, "DeadlineExceeded")], NOW))
    assert stop["conditions"][0]["reason"] == "FailJobSetFailurePolicyAction"
    default = _status(reconcile_jobset(js, [_failed_job(js, 0)], NOW))
    assert default["restartsCountTowardsMax"] == 1


def test_success_policy_any() -> None:
    js = _with_uid(s1_jobset("x", 2))
    js["spec"]["successPolicy"] = {"operator": "Any"}
    done = build_job(js, js["spec"]["replicatedJobs"][0], 0)
    done["metadata"]["uid"] = "d"
    done["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    status = _status(reconcile_jobset(js, [done], NOW))
    assert status["terminalState"] == "Completed"
    assert status["conditions"][0]["reason"] == "AllJobsCompleted"


def _two_rjobs() -> dict[str, Any]:
    js = _with_uid(s1_jobset("x", 1))
    leader = js["spec"]["replicatedJobs"][0]
    js["spec"]["replicatedJobs"] = [{**leader, "name": "leader"}, {**leader, "name": "workers"}]
    return js


def _failed(js: dict[str, Any], rjob: int, when: str, reason: str, message: str = "") -> Any:
    job = build_job(js, js["spec"]["replicatedJobs"][rjob], 0)
    job["metadata"]["uid"] = f"uid-{rjob}"
    stamp = f"2026-01-01T00:00:{when}Z"
    job["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": reason,
                                     "message": message, "lastTransitionTime": stamp}]}  # fmt: skip
    return job


def _events(actions: list[Any]) -> list[tuple[str, str]]:
    return [(a.reason, a.message) for a in actions if isinstance(a, Event)]


def test_the_first_matching_rule_wins_and_blames_its_earliest_job() -> None:
    js = _two_rjobs()
    js["spec"]["failurePolicy"]["rules"] = [
        {"name": "workers-die", "action": "FailJobSet", "targetReplicatedJobs": ["workers"]},
        {"action": "RestartJobSetAndIgnoreMaxRestarts"},
    ]
    early_leader = _failed(js, 0, "01", "BackoffLimitExceeded")
    late_worker = _failed(js, 1, "09", "BackoffLimitExceeded")
    actions = reconcile_jobset(js, [early_leader, late_worker], NOW)
    status = _status(actions)
    assert status["conditions"][0]["reason"] == "FailJobSetFailurePolicyAction"
    assert status["conditions"][0]["message"] == (
        "applying FailJobSet failure policy action (first failed job: x-workers-0)"
    )
    assert ("FailJobSetFailurePolicyAction", status["conditions"][0]["message"]) in _events(actions)

    only_leader = _status(reconcile_jobset(js, [early_leader], NOW))
    assert only_leader["restarts"] == 1  # rule 1 (no restriction): restart, budget untouched
    assert only_leader["conditions"][0]["reason"] == "FailurePolicy_failurePolicyRule1"


@pytest.mark.parametrize(
    ("patterns", "restarts_free"),
    [(["exit code 4[0-9]"], True), (["^Container"], True), (["exit code 7"], False),
     (["(unclosed"], False)],
)  # fmt: skip
def test_rules_on_failure_message_patterns(patterns: list[str], restarts_free: bool) -> None:
    js = _with_uid(s1_jobset("x", 1))
    js["spec"]["failurePolicy"]["rules"] = [{
        "action": "RestartJobSetAndIgnoreMaxRestarts", "onJobFailureReasons": ["PodFailurePolicy"],
        "onJobFailureMessagePatterns": patterns}]  # fmt: skip
    message = "Container jax-tpu for pod default/x-slice-0-0-ab failed with exit code 42"
    status = _status(reconcile_jobset(js, [_failed(js, 0, "01", "PodFailurePolicy", message)], NOW))
    assert status["restarts"] == 1
    assert ("restartsCountTowardsMax" not in status) == restarts_free


def test_restarting_condition_lifecycle() -> None:
    js = _with_uid(s1_jobset("x", 1))
    actions = reconcile_jobset(js, [_failed(js, 0, "01", "BackoffLimitExceeded")], NOW)
    js["status"] = _status(actions)
    restarting = condition(js, "RestartingJobSet")
    assert restarting is not None
    assert (restarting["status"], restarting["reason"], restarting["message"]) == (
        "True", "DefaultFailurePolicy", "restarting jobset, attempt 1")  # fmt: skip
    assert [r for r, _ in _events(actions)] == ["RestartJobSetFailurePolicyAction",
                                                "DefaultFailurePolicy"]  # fmt: skip

    # Another failure before the Jobs are ready again: the condition stays as it was.
    js["status"]["conditions"] = [restarting]
    again = _failed(js, 0, "05", "BackoffLimitExceeded")
    again["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = "1"
    second = reconcile_jobset(js, [again], NOW)
    assert _status(second)["restarts"] == 2
    assert [r for r, _ in _events(second)] == ["RestartJobSetFailurePolicyAction"]

    ready = build_job(js, js["spec"]["replicatedJobs"][0], 0)
    ready["metadata"]["uid"] = "ready"
    ready["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = "1"
    ready["status"] = {"ready": 2, "active": 2}
    done = reconcile_jobset(js, [ready], NOW)
    assert (
        present(condition({"status": _status(done)}, "RestartingJobSet"))["reason"] == "JobsReady"
    )
    assert ("JobsReady", "all jobs are ready") in _events(done)


def test_a_failure_past_max_restarts_ends_the_restart() -> None:
    js = _with_uid(s1_jobset("x", 1))
    js["status"] = {
        "restarts": 4,
        "restartsCountTowardsMax": 4,
        "conditions": [
            {"type": "RestartingJobSet", "status": "True", "reason": "DefaultFailurePolicy"}
        ],
    }
    job = _failed(js, 0, "01", "BackoffLimitExceeded")
    job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] = "4"
    status = _status(reconcile_jobset(js, [job], NOW))
    assert {c["type"]: c["reason"] for c in status["conditions"]} == {
        "RestartingJobSet": "JobSetFailed", "Failed": "ReachedMaxRestarts"}  # fmt: skip


class _Recorder(World):
    """A World that checks BlockingRecreate: no Job of a new attempt while an older one exists."""

    created: list[str]

    def apply(self, actions: Iterable[Any]) -> int:
        changed = 0
        for action in actions:
            if isinstance(action, Create) and action.obj["kind"] == "Job":
                attempt = int(labels_of(action.obj)["jobset.sigs.k8s.io/restart-attempt"])
                older = [
                    j["metadata"]["name"]
                    for j in self.of_kind("Job")
                    if int(labels_of(j)["jobset.sigs.k8s.io/restart-attempt"]) < attempt
                ]
                assert older == [], f"attempt {attempt} created while {older} remain"  # fmt: skip
                self.created.append(f"{action.obj['metadata']['name']}@{attempt}")
            changed += super().apply([action])
        return changed


def test_blocking_recreate_and_max_restarts_on_the_simulated_cluster() -> None:
    w = _Recorder()
    w.created = []
    for n in node_objects(load_profile("s1"), w.clock.now()):
        w.add(n)
    js = s1_jobset("x", 2)
    js["spec"]["failurePolicy"] = {"maxRestarts": 2, "restartStrategy": "BlockingRecreate"}
    pod_template = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod_template["metadata"] = {"annotations": {"kq.dev/exit-code": "1"}}
    w.add(js)
    w.run(lambda w: bool((w.get("JobSet", "x").get("status") or {}).get("terminalState")))
    status = w.get("JobSet", "x")["status"]
    assert (status["restarts"], status["restartsCountTowardsMax"]) == (2, 2)
    assert present(condition(w.get("JobSet", "x"), "Failed"))["reason"] == "ReachedMaxRestarts"
    assert w.created == [f"x-slice-{i}@{a}" for a in range(3) for i in range(2)]
    reasons = [e.reason for e in w.events if e.regarding.kind == "JobSet"]
    restart = ["RestartJobSetFailurePolicyAction", "DefaultFailurePolicy", "JobsReady"]
    # Each attempt's Jobs got ready before their pods failed; the last failure ends it all.
    assert reasons == [*restart, *restart, "ReachedMaxRestarts"]
