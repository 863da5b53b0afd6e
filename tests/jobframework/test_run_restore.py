"""Admission merged into the templates on start, and the originals restored exactly on stop."""

from __future__ import annotations

from typing import Any

import pytest

from kq.jobframework import GenericJob, JobWithCustomStop, PodSetInfo, PodSetInfoError
from kq.jobframework.admission import FlavorNotFound, admitted_infos, original_infos
from kq.jobframework.podset import PodSet
from kq.jobframework.priority import Priority
from kq.jobframework.workload import build_workload
from tests.jobframework.conftest import example, rayjob

TPU_FLAVOR: dict[str, Any] = {
    "metadata": {"name": "vlp-24"},
    "spec": {
        "nodeLabels": {
            "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
            "cloud.google.com/gke-tpu-topology": "2x4",
        },
        "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
    },
}


def admitted(
    integration: GenericJob,
    job: dict[str, Any],
    flavor: str = "vlp-24",
    checks: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The job's Workload as the scheduler leaves it once admitted on ``flavor``."""
    pod_sets: list[PodSet] = integration.pod_sets(job)
    workload = build_workload(integration, job, pod_sets, "q", Priority(0))
    workload["status"] = {
        "conditions": [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "True"},
        ],
        "admission": {
            "clusterQueue": "cluster-queue",
            "podSetAssignments": [
                {"name": ps.name, "flavors": {"google.com/tpu": flavor}, "count": ps.count}
                for ps in pod_sets
            ],
        },
        "admissionChecks": checks or [],
    }
    return workload


def test_s1_jobset_runs_with_flavor_node_labels_then_restores_exactly(
    jobset_kind: GenericJob,
) -> None:
    jobset = example("s1/jobsets-multislice-standard.yaml", "multislice-3slice")
    jobset["spec"]["suspend"] = True
    workload = admitted(jobset_kind, jobset)
    running = jobset_kind.run_with_pod_set_info(
        jobset, admitted_infos(workload, {"vlp-24": TPU_FLAVOR})
    )
    assert running["spec"]["suspend"] is False
    template = running["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert template["spec"]["nodeSelector"] == TPU_FLAVOR["spec"]["nodeLabels"]
    assert template["spec"]["tolerations"] == TPU_FLAVOR["spec"]["tolerations"]
    assert template["metadata"]["labels"] == {
        "kueue.x-k8s.io/podset": "slice",
        "kueue.x-k8s.io/local-queue-name": "q",
        "kueue.x-k8s.io/cluster-queue-name": "cluster-queue",
    }
    stopped = jobset_kind.restore_pod_sets_info(
        jobset_kind.suspend(running), original_infos(workload)
    )
    assert stopped == jobset


def test_s4_mpijob_merges_per_replica_type_and_restores(mpijob_kind: GenericJob) -> None:
    mpijob = example("s4/jobs/team-a-mpijob.yaml", "team-a-mpi")
    spot = {"spec": {"nodeLabels": {"cloud.google.com/gke-spot": "true"}}}
    workload = admitted(mpijob_kind, mpijob, flavor="spot")
    running = mpijob_kind.run_with_pod_set_info(mpijob, admitted_infos(workload, {"spot": spot}))
    assert running["spec"]["runPolicy"]["suspend"] is False
    for replica_type, podset in (("Launcher", "launcher"), ("Worker", "worker")):
        template = running["spec"]["mpiReplicaSpecs"][replica_type]["template"]
        assert template["spec"]["nodeSelector"] == {"cloud.google.com/gke-spot": "true"}
        assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == podset
    assert (
        mpijob_kind.restore_pod_sets_info(mpijob_kind.suspend(running), original_infos(workload))
        == mpijob
    )


def test_s3_job_gets_provisioning_annotations_and_keeps_its_own_selector(
    job_kind: GenericJob,
) -> None:
    job = example("s3/job.yaml", "sample-job")
    check: dict[str, Any] = {
        "name": "dws-prov",
        "state": "Ready",
        "podSetUpdates": [
            {
                "name": "main",
                "annotations": {
                    "autoscaling.x-k8s.io/consume-provisioning-request": "wl-dws-prov-1",
                    "autoscaling.x-k8s.io/provisioning-class-name": "queued-provisioning.gke.io",
                },
            }
        ],
    }
    workload = admitted(job_kind, job, flavor="default-flavor", checks=[check])
    infos = admitted_infos(workload, {"default-flavor": {"spec": {}}})
    running = job_kind.run_with_pod_set_info(job, infos)
    template = running["spec"]["template"]
    assert template["metadata"]["annotations"] == check["podSetUpdates"][0]["annotations"]
    assert template["spec"]["nodeSelector"] == {"cloud.google.com/gke-nodepool": "NODEPOOL_NAME"}
    assert template["spec"]["tolerations"] == job["spec"]["template"]["spec"]["tolerations"]
    assert (
        job_kind.restore_pod_sets_info(job_kind.suspend(running), original_infos(workload)) == job
    )


def test_rayjob_merges_head_workers_and_default_submitter(rayjob_kind: GenericJob) -> None:
    job = rayjob(suspend=True)
    workload = admitted(rayjob_kind, job)
    running = rayjob_kind.run_with_pod_set_info(
        job, admitted_infos(workload, {"vlp-24": TPU_FLAVOR})
    )
    cluster = running["spec"]["rayClusterSpec"]
    selectors = [cluster["headGroupSpec"]["template"]["spec"]["nodeSelector"]] + [
        g["template"]["spec"]["nodeSelector"] for g in cluster["workerGroupSpecs"]
    ]
    assert selectors == [TPU_FLAVOR["spec"]["nodeLabels"]] * 3
    submitter = running["spec"]["submitterPodTemplate"]
    assert submitter["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "submitter"
    restored = rayjob_kind.restore_pod_sets_info(
        rayjob_kind.suspend(running), original_infos(workload)
    )
    assert restored["spec"]["rayClusterSpec"] == job["spec"]["rayClusterSpec"]
    assert restored["spec"]["submitterPodTemplate"] == workload["spec"]["podSets"][3]["template"]


def test_conflicting_podset_update_is_a_permanent_error(job_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    check: dict[str, Any] = {
        "name": "c",
        "podSetUpdates": [
            {"name": "main", "nodeSelector": {"cloud.google.com/gke-nodepool": "other"}}
        ],
    }
    workload = admitted(job_kind, job, checks=[check])
    infos = admitted_infos(workload, {"vlp-24": {"spec": {}}})
    with pytest.raises(PodSetInfoError, match="conflict for nodeSelector"):
        job_kind.run_with_pod_set_info(job, infos)


def test_wrong_number_of_infos_is_rejected_on_run_and_ignored_on_restore(
    jobset_kind: GenericJob,
) -> None:
    jobset = example("s1/jobsets-multislice-standard.yaml", "multislice-1slice")
    infos = [PodSetInfo("a", 1), PodSetInfo("b", 1)]
    with pytest.raises(PodSetInfoError, match="expecting 1 podset, got 2"):
        jobset_kind.run_with_pod_set_info(jobset, infos)
    assert jobset_kind.restore_pod_sets_info(jobset, infos) == jobset


def test_unknown_flavor_is_reported_for_a_retry(job_kind: GenericJob) -> None:
    workload = admitted(job_kind, example("s3/job.yaml", "sample-job"))
    with pytest.raises(FlavorNotFound, match="vlp-24"):
        admitted_infos(workload, {})


def test_partial_admission_sets_parallelism_and_restore_puts_it_back(job_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    job["spec"].update(parallelism=4, completions=4)
    job["metadata"]["annotations"].update(
        {
            "kueue.x-k8s.io/job-min-parallelism": "2",
            "kueue.x-k8s.io/job-completions-equal-parallelism": "true",
        }
    )
    workload = admitted(job_kind, job)
    workload["status"]["admission"]["podSetAssignments"][0]["count"] = 3
    running = job_kind.run_with_pod_set_info(
        job, admitted_infos(workload, {"vlp-24": {"spec": {}}})
    )
    assert (running["spec"]["parallelism"], running["spec"]["completions"]) == (3, 3)
    restored = job_kind.restore_pod_sets_info(job_kind.suspend(running), original_infos(workload))
    assert restored == job


def test_batch_job_stop_suspends_clears_start_time_then_restores(job_kind: GenericJob) -> None:
    assert isinstance(job_kind, JobWithCustomStop)
    job = example("s3/job.yaml", "sample-job")
    workload = admitted(job_kind, job)
    running = job_kind.run_with_pod_set_info(job, admitted_infos(workload, {"vlp-24": TPU_FLAVOR}))
    running["status"] = {"startTime": "2026-11-21T10:00:00Z", "active": 1}
    first, reset, restore = job_kind.stop(running, original_infos(workload))
    assert first.job is not None
    assert first.job["spec"]["suspend"] is True
    assert first.job["metadata"]["annotations"]["kueue.x-k8s.io/stopping"] == "true"
    assert not job_kind.is_suspended(first.job)
    assert reset.status_patch == {"status": {"startTime": None}}
    assert restore.job is not None
    assert job_kind.is_suspended(restore.job)
    assert {**restore.job, "status": None} == {**job, "status": None}
    settled = {**restore.job, "status": {}}
    assert job_kind.stop(settled, original_infos(workload)) == []
