"""Defaulting on create (suspend managed jobs) and validation messages."""

from __future__ import annotations

from typing import Any

import pytest

from kq.jobframework import GenericJob
from kq.jobframework.webhook import (
    default_on_create,
    format_errors,
    validate_on_create,
    validate_on_update,
)
from tests.jobframework.conftest import example, manifests, rayjob, stored

QUEUE_PATH = "metadata.labels[kueue.x-k8s.io/queue-name]"


def suspended_field(integration: GenericJob, job: dict[str, Any]) -> Any:
    return (
        job["spec"]["runPolicy"]["suspend"]
        if integration.NAME == "kubeflow.org/mpijob"
        else (job["spec"].get("suspend"))
    )


@pytest.mark.parametrize(
    ("kind", "path", "name"),
    [
        ("jobset.x-k8s.io/jobset", "s1/jobsets-multislice-standard.yaml", "multislice-1slice"),
        ("batch/job", "s3/job.yaml", "sample-job"),
        ("kubeflow.org/mpijob", "s4/jobs/team-a-mpijob.yaml", "team-a-mpi"),
    ],
)
def test_jobs_naming_a_queue_are_suspended_on_create(
    integrations: dict[str, GenericJob], kind: str, path: str, name: str
) -> None:
    integration = integrations[kind]
    job = example(path, name)
    if kind == "kubeflow.org/mpijob":
        job["spec"]["runPolicy"]["suspend"] = False
    else:
        job["spec"]["suspend"] = False
    defaulted = default_on_create(integration, job)
    assert suspended_field(integration, defaulted) is True
    assert integration.is_suspended(defaulted)
    assert not integration.is_suspended(job)


def test_s2_jobsets_with_the_annotation_are_suspended(jobset_kind: GenericJob) -> None:
    for jobset in manifests("s2/kueue-hotswap.yaml", "JobSet"):
        assert default_on_create(jobset_kind, stored(jobset))["spec"]["suspend"] is True


def test_rayjob_is_suspended_on_create(rayjob_kind: GenericJob) -> None:
    assert default_on_create(rayjob_kind, rayjob())["spec"]["suspend"] is True


def test_unmanaged_and_child_jobs_are_left_alone(job_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    job["spec"]["suspend"] = False
    assert default_on_create(job_kind, job, ancestor_managed=True) == job
    del job["metadata"]["labels"]
    assert default_on_create(job_kind, job) == job
    assert default_on_create(job_kind, job, manage_jobs_without_queue_name=True)["spec"]["suspend"]


def test_default_local_queue_is_applied(job_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    del job["metadata"]["labels"]
    defaulted = default_on_create(job_kind, job, default_local_queue_exists=True)
    assert defaulted["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "default"}
    assert defaulted["spec"]["suspend"] is True


def test_queue_name_change_is_rejected_while_running(jobset_kind: GenericJob) -> None:
    old = example("s1/jobsets-multislice-standard.yaml", "multislice-1slice")
    old["spec"]["suspend"] = False
    new = {**old, "metadata": {**old["metadata"], "labels": {"kueue.x-k8s.io/queue-name": "b"}}}
    errors = validate_on_update(jobset_kind, old, new)
    assert format_errors(errors) == f'{QUEUE_PATH}: Invalid value: "b": field is immutable'
    assert validate_on_update(jobset_kind, jobset_kind.suspend(old), jobset_kind.suspend(new)) == []


def test_queue_name_cannot_be_removed_with_a_default_queue(job_kind: GenericJob) -> None:
    old = example("s3/job.yaml", "sample-job")
    new = {**old, "metadata": {**old["metadata"], "labels": {}}}
    errors = validate_on_update(job_kind, old, new, default_local_queue_exists=True)
    assert [e.detail for e in errors] == [
        "queue-name must not be empty in namespace with default queue"
    ]


def test_priority_class_label_rules(job_kind: GenericJob) -> None:
    old = example("s3/job.yaml", "sample-job")
    old["spec"]["suspend"] = False
    labelled = {
        **old,
        "metadata": {
            **old["metadata"],
            "labels": {**old["metadata"]["labels"], "kueue.x-k8s.io/priority-class": "high"},
        },
    }
    added = validate_on_update(job_kind, old, labelled)
    assert [e.detail for e in added] == [
        "WorkloadPriorityClass cannot be added to a non-suspended workload"
    ]
    assert validate_on_update(job_kind, job_kind.suspend(old), job_kind.suspend(labelled)) == []
    removed = validate_on_update(job_kind, job_kind.suspend(labelled), job_kind.suspend(old))
    assert [e.detail for e in removed] == [
        "WorkloadPriorityClass cannot be removed from a workload"
    ]


def test_create_validation_of_labels(job_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    job["metadata"]["labels"].update(
        {"kueue.x-k8s.io/queue-name": "Bad_Queue", "kueue.x-k8s.io/max-exec-time-seconds": "0"}
    )
    message = format_errors(validate_on_create(job_kind, job))
    assert message.startswith(f'[{QUEUE_PATH}: Invalid value: "Bad_Queue": a lowercase RFC 1123')
    assert message.endswith(
        "metadata.labels[kueue.x-k8s.io/max-exec-time-seconds]: Invalid value: 0: "
        "should be greater than 0]"
    )


def test_rayjob_rules_for_managed_jobs(rayjob_kind: GenericJob) -> None:
    job = rayjob(shutdownAfterJobFinishes=False)
    job["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["groupName"] = "head"
    assert [str(e) for e in validate_on_create(rayjob_kind, job)] == [
        "spec.shutdownAfterJobFinishes: Invalid value: false: "
        "a kueue managed job should delete the cluster after finishing",
        "spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: true: "
        "a kueue managed job should only use autoscaling when workload slicing is enabled",
        'spec.rayClusterSpec.workerGroupSpecs[0].groupName: Forbidden: "head" is reserved for '
        "the head group",
    ]
    assert validate_on_create(rayjob_kind, rayjob()) == []
    both = rayjob(clusterSelector={"ray.io/cluster": "c"})
    assert [e.path for e in validate_on_create(rayjob_kind, both)] == ["spec.clusterSelector"]
    unqueued = rayjob(shutdownAfterJobFinishes=False)
    del unqueued["metadata"]["labels"]
    assert validate_on_create(rayjob_kind, unqueued) == []


def test_rayjob_without_cluster_and_with_too_many_groups(rayjob_kind: GenericJob) -> None:
    bare = rayjob()
    del bare["spec"]["rayClusterSpec"]
    assert [str(e) for e in validate_on_create(rayjob_kind, bare)] == [
        "spec.rayClusterSpec: Required value: rayClusterSpec is required for Kueue-managed jobs "
        "that don't use clusterSelector"
    ]
    crowded = rayjob()
    groups = crowded["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    groups[:] = [{**groups[0], "groupName": f"g{i}"} for i in range(18)]
    assert [str(e) for e in validate_on_create(rayjob_kind, crowded)] == [
        "spec.rayClusterSpec.workerGroupSpecs: Too many: 19: must have at most 18 items"
    ]
