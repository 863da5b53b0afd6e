"""PodSets of every built-in integration, from the scenario manifests (names, counts, templates)."""

from __future__ import annotations

import pytest

from kq.jobframework import GenericJob
from tests.jobframework.conftest import example, manifests, rayjob, stored


@pytest.mark.parametrize(
    ("name", "count"),
    [("multislice-1slice", 2), ("multislice-2slice", 4), ("multislice-3slice", 6)],
)
def test_s1_jobset_has_one_pod_set_per_replicated_job(
    jobset_kind: GenericJob, name: str, count: int
) -> None:
    jobset = example("s1/jobsets-multislice-standard.yaml", name)
    [pod_set] = jobset_kind.pod_sets(jobset)
    assert (pod_set.name, pod_set.count, pod_set.min_count) == ("slice", count, None)
    original = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    # exclusive-topology makes each child Job a slice that needs a node pool of its own
    level = "cloud.google.com/gke-nodepool"
    assert pod_set.template == original
    assert pod_set.exclusive
    assert pod_set.topology_request == {
        "podSetSliceRequiredTopology": level,
        "podSetSliceSize": 2,
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
        "subGroupCount": count // 2,
    }
    assert pod_set.template["spec"]["containers"][0]["resources"]["limits"] == {"google.com/tpu": 4}


def test_s2_jobsets_count_replicas_times_parallelism(jobset_kind: GenericJob) -> None:
    for jobset in manifests("s2/kueue-hotswap.yaml", "JobSet"):
        [pod_set] = jobset_kind.pod_sets(stored(jobset))
        assert (pod_set.name, pod_set.count) == ("slice", 8)


def test_jobset_pod_set_names_are_lower_cased_and_completions_bound_the_count(
    jobset_kind: GenericJob,
) -> None:
    jobset = example("s1/jobsets-multislice-standard.yaml", "multislice-2slice")
    rjob = jobset["spec"]["replicatedJobs"][0]
    rjob["name"] = "Driver"
    rjob["template"]["spec"]["completions"] = 1
    [pod_set] = jobset_kind.pod_sets(jobset)
    assert (pod_set.name, pod_set.count) == ("driver", 2)


def test_s3_job_has_one_main_pod_set(job_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    [pod_set] = job_kind.pod_sets(job)
    assert (pod_set.name, pod_set.count) == ("main", 1)
    assert pod_set.template == job["spec"]["template"]


def test_s4_jobs_have_one_main_pod_set(job_kind: GenericJob) -> None:
    for path in (
        "team-a-gpu-head-job.yaml",
        "team-a-cpu-only-job.yaml",
        "team-b-borrowing-job.yaml",
    ):
        for job in manifests(f"s4/jobs/{path}", "Job"):
            [pod_set] = job_kind.pod_sets(stored(job))
            spec = job["spec"]
            assert pod_set.name == "main"
            assert pod_set.count == min(spec.get("parallelism", 1), spec.get("completions", 10**9))


def test_job_count_is_parallelism_bounded_by_completions_with_min_count(
    job_kind: GenericJob,
) -> None:
    job = example("s3/job.yaml", "sample-job")
    job["spec"].update(parallelism=5, completions=3)
    job["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "2"
    [pod_set] = job_kind.pod_sets(job)
    assert (pod_set.count, pod_set.min_count) == (3, 2)


def test_job_pod_set_drops_job_controller_labels_but_job_name(job_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    job["spec"]["template"]["metadata"] = {
        "labels": {
            "controller-uid": "u",
            "job-name": "sample-job",
            "batch.kubernetes.io/controller-uid": "u",
            "batch.kubernetes.io/job-name": "sample-job",
            "app": "x",
        }
    }
    [pod_set] = job_kind.pod_sets(job)
    assert pod_set.template["metadata"]["labels"] == {
        "batch.kubernetes.io/job-name": "sample-job",
        "app": "x",
    }


def test_s4_mpijob_has_launcher_then_worker(mpijob_kind: GenericJob) -> None:
    mpijob = example("s4/jobs/team-a-mpijob.yaml", "team-a-mpi")
    pod_sets = mpijob_kind.pod_sets(mpijob)
    assert [(ps.name, ps.count) for ps in pod_sets] == [("launcher", 1), ("worker", 4)]
    assert pod_sets[1].template["spec"]["containers"][0]["name"] == "worker"


def test_mpijob_without_launcher_and_unset_replicas(mpijob_kind: GenericJob) -> None:
    mpijob = example("s4/jobs/team-a-mpijob.yaml", "team-a-mpi")
    del mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]
    del mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    assert [(ps.name, ps.count) for ps in mpijob_kind.pod_sets(mpijob)] == [("worker", 1)]


def test_rayjob_pod_sets_head_workers_submitter(rayjob_kind: GenericJob) -> None:
    pod_sets = rayjob_kind.pod_sets(rayjob())
    assert [(ps.name, ps.count) for ps in pod_sets] == [
        ("head", 1),
        ("small", 2),
        ("tpu", 8),
        ("submitter", 1),
    ]
    [submitter] = pod_sets[3].template["spec"]["containers"]
    assert submitter["image"] == "rayproject/ray:2.9"
    assert submitter["resources"]["requests"] == {"cpu": "500m", "memory": "200Mi"}


def test_rayjob_unset_worker_replicas_count_one_and_min_max_are_ignored(
    rayjob_kind: GenericJob,
) -> None:
    job = rayjob(submissionMode="HTTPMode")
    group = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    del group["replicas"]
    group.update(minReplicas=5, maxReplicas=9)
    assert [(ps.name, ps.count) for ps in rayjob_kind.pod_sets(job)][:2] == [
        ("head", 1),
        ("small", 1),
    ]
    assert len(rayjob_kind.pod_sets(job)) == 3


def test_rayjob_sidecar_and_autoscaler_containers_count_on_the_head(
    rayjob_kind: GenericJob,
) -> None:
    job = rayjob(submissionMode="SidecarMode")
    job["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] = True
    head = rayjob_kind.pod_sets(job)[0]
    assert [c["name"] for c in head.template["spec"]["containers"]] == [
        "head",
        "autoscaler",
        "ray-job-submitter",
    ]
    assert "submitter" not in [ps.name for ps in rayjob_kind.pod_sets(job)]
