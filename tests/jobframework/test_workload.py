"""Workload names and shape, queue names (label or deprecated annotation), and priorities."""

from __future__ import annotations

import hashlib

import pytest

from kq.jobframework import GenericJob, GroupVersionKind
from kq.jobframework.naming import SHORT_MAX_NAME_LENGTH, workload_name
from kq.jobframework.priority import Priorities, Priority, PriorityNotFound, resolve_priority
from kq.jobframework.queue_name import is_managed, queue_name
from kq.jobframework.workload import build_workload
from tests.jobframework.conftest import example, manifests, stored

JOBSET = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")
HOTSWAP_CLASSES = Priorities({}, {"low-priority-job": 1000000, "high-priority-job": 2000000})


def test_workload_name_is_kind_name_and_sha1_of_kind_group_name_uid() -> None:
    digest = hashlib.sha1(b"JobSet\njobset.x-k8s.io\ntrainer\nuid-1").hexdigest()
    assert workload_name("trainer", "uid-1", JOBSET) == f"jobset-trainer-{digest[:5]}"


def test_workload_name_hash_separates_kinds_and_uids() -> None:
    job = GroupVersionKind("batch", "v1", "Job")
    names = {
        workload_name("x", "uid-1", JOBSET),
        workload_name("x", "uid-2", JOBSET),
        workload_name("x", "uid-1", job),
    }
    assert len(names) == 3


@pytest.mark.parametrize("limit", [253, SHORT_MAX_NAME_LENGTH])
def test_long_names_are_truncated_before_the_hash(limit: int) -> None:
    name = workload_name("a" * 300, "uid", JOBSET, max_length=limit)
    assert len(name) == limit
    assert name.startswith("jobset-aaa")
    assert name[-6] == "-"


def test_s1_workload_object_shape(jobset_kind: GenericJob) -> None:
    jobset = example("s1/jobsets-multislice-standard.yaml", "multislice-3slice", uid="3f2a")
    pod_sets = jobset_kind.pod_sets(jobset)
    workload = build_workload(jobset_kind, jobset, pod_sets, "multislice-queue", Priority(0))
    metadata = workload["metadata"]
    assert workload["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert metadata["name"] == workload_name("multislice-3slice", "3f2a", JOBSET)
    assert metadata["namespace"] == "default"
    assert metadata["labels"] == {"kueue.x-k8s.io/job-uid": "3f2a"}
    assert metadata["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    assert metadata["ownerReferences"] == [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "multislice-3slice",
            "uid": "3f2a",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    # the JobSet's exclusive-topology: Kueue's topologyRequest has no word for exclusivity
    level = "cloud.google.com/gke-nodepool"
    assert metadata["annotations"] == {"alpha.jobset.sigs.k8s.io/exclusive-topology": level}
    assert workload["spec"] == {
        "queueName": "multislice-queue",
        "podSets": [
            {
                "name": "slice",
                "count": 6,
                "template": pod_sets[0].template,
                "topologyRequest": {
                    "podSetSliceRequiredTopology": level,
                    "podSetSliceSize": 2,
                    "podIndexLabel": "batch.kubernetes.io/job-completion-index",
                    "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
                    "subGroupCount": 3,
                },
            }
        ],
        "priority": 0,
    }


def test_s3_workload_carries_provreq_annotations_and_max_exec_time(job_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "600"
    job["metadata"]["annotations"]["unrelated"] = "x"
    workload = build_workload(job_kind, job, job_kind.pod_sets(job), "dws-local-queue", Priority(0))
    assert workload["metadata"]["annotations"] == {
        "provreq.kueue.x-k8s.io/maxRunDurationSeconds": "600"
    }
    assert workload["spec"]["maximumExecutionTimeSeconds"] == 600
    assert workload["metadata"]["name"].startswith("job-sample-job-")


def test_queue_name_from_label() -> None:
    queue = queue_name(example("s3/job.yaml", "sample-job"))
    assert (queue.name, queue.from_annotation, queue.warning) == ("dws-local-queue", False, None)


def test_s2_queue_name_from_deprecated_annotation_with_warning() -> None:
    for jobset in manifests("s2/kueue-hotswap.yaml", "JobSet"):
        queue = queue_name(jobset)
        assert (queue.name, queue.from_annotation) == ("default-queue", True)
        assert queue.warning is not None
        assert "deprecated" in queue.warning
        assert "label" in queue.warning


def test_label_wins_over_annotation() -> None:
    jobset = next(manifests("s2/kueue-hotswap.yaml", "JobSet"))
    jobset["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "other"}
    assert queue_name(jobset).name == "other"


def test_jobs_without_queue_are_managed_only_when_configured() -> None:
    job = example("s3/job.yaml", "sample-job")
    del job["metadata"]["labels"]
    assert not is_managed(job)
    assert is_managed(job, manage_jobs_without_queue_name=True)
    assert not is_managed(job, manage_jobs_without_queue_name=True, namespace_managed=False)


def test_s2_priority_comes_from_the_pod_priority_class_not_the_template_label(
    jobset_kind: GenericJob,
) -> None:
    expected = {"low-jax-trillium": 1000000, "high-jax-trillium": 2000000}
    for jobset in manifests("s2/kueue-hotswap.yaml", "JobSet"):
        name = jobset["metadata"]["name"]
        priority = resolve_priority(
            jobset_kind, jobset, jobset_kind.pod_sets(stored(jobset)), HOTSWAP_CLASSES
        )
        assert isinstance(priority, Priority)
        assert priority.value == expected[name]
        assert priority.source == "scheduling.k8s.io/priorityclass"


def test_workload_priority_class_label_wins(jobset_kind: GenericJob) -> None:
    jobset = example("s1/low-priority-jobset-standard.yaml", "low-priority")
    jobset["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
    classes = Priorities({"urgent": 7}, {"low-priority": 100})
    priority = resolve_priority(jobset_kind, jobset, jobset_kind.pod_sets(jobset), classes)
    assert priority == Priority(7, "urgent", "kueue.x-k8s.io/workloadpriorityclass")
    workload = build_workload(jobset_kind, jobset, jobset_kind.pod_sets(jobset), "q", priority)
    assert (
        workload["spec"]["priorityClassName"],
        workload["spec"]["priority"],
        workload["spec"]["priorityClassSource"],
    ) == ("urgent", 7, "kueue.x-k8s.io/workloadpriorityclass")


def test_missing_classes_are_reported_and_defaults_apply(jobset_kind: GenericJob) -> None:
    jobset = example("s1/low-priority-jobset-standard.yaml", "low-priority")
    pod_sets = jobset_kind.pod_sets(jobset)
    missing = resolve_priority(jobset_kind, jobset, pod_sets, Priorities({}, {}))
    assert missing == PriorityNotFound(
        "PriorityClassNotFound", 'PriorityClass "low-priority" not found'
    )
    jobset["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "nope"
    assert resolve_priority(jobset_kind, jobset, pod_sets, Priorities({}, {})) == PriorityNotFound(
        "WorkloadPriorityClassNotFound", 'WorkloadPriorityClass "nope" not found'
    )
    plain = example("s1/jobsets-multislice-standard.yaml", "multislice-1slice")
    defaults = Priorities({}, {"a": 5, "b": 3}, global_defaults=("a", "b"))
    assert resolve_priority(jobset_kind, plain, [], defaults) == Priority(
        3, "b", "scheduling.k8s.io/priorityclass"
    )
    assert resolve_priority(jobset_kind, plain, [], Priorities({}, {})) == Priority(0)


def test_mpijob_priority_prefers_scheduling_policy_then_launcher(mpijob_kind: GenericJob) -> None:
    mpijob = example("s4/jobs/team-a-mpijob.yaml", "team-a-mpi")
    specs = mpijob["spec"]["mpiReplicaSpecs"]
    specs["Worker"]["template"]["spec"]["priorityClassName"] = "w"
    specs["Launcher"]["template"]["spec"]["priorityClassName"] = "l"
    classes = Priorities({}, {"w": 1, "l": 2, "p": 3})
    pod_sets = mpijob_kind.pod_sets(mpijob)
    assert resolve_priority(mpijob_kind, mpijob, pod_sets, classes) == Priority(
        2, "l", "scheduling.k8s.io/priorityclass"
    )
    mpijob["spec"]["runPolicy"]["schedulingPolicy"] = {"priorityClass": "p"}
    assert isinstance(
        priority := resolve_priority(mpijob_kind, mpijob, pod_sets, classes), Priority
    )
    assert priority.value == 3
