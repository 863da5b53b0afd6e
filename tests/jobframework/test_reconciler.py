"""The pure reconciler's decisions through whole job lives, and its edge cases."""

from __future__ import annotations

from typing import Any

from kq.jobframework import ClusterFacts, GenericJob, decide, job_deleted
from kq.jobframework import actions as act
from kq.jobframework.priority import Priorities
from kq.jobframework.webhook import default_on_create
from tests.jobframework.conftest import example, manifests, stored
from tests.jobframework.world import World

TPU_LABELS = {
    "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
    "cloud.google.com/gke-tpu-topology": "2x4",
}
FACTS = ClusterFacts(
    flavors={"vlp-24": {"metadata": {"name": "vlp-24"}, "spec": {"nodeLabels": TPU_LABELS}}}
)
PREEMPTED = (
    "Preempted to accommodate a workload (UID: u2, JobUID: j2) "
    "due to prioritization in the ClusterQueue"
)


def kinds(actions: list[act.Action]) -> list[str]:
    return [type(a).__name__ for a in actions]


def template_of(jobset: dict[str, Any]) -> dict[str, Any]:
    template: dict[str, Any] = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return template


def test_s1_jobset_whole_life(jobset_kind: GenericJob) -> None:
    original = default_on_create(
        jobset_kind, example("s1/jobsets-multislice-standard.yaml", "multislice-3slice")
    )
    world = World(jobset_kind, original, FACTS)

    created = world.step()
    assert kinds(created) == ["CreateWorkload", "Event"]
    name = world.workload["metadata"]["name"]
    assert created[1] == act.Event("CreatedWorkload", f"Created Workload: default/{name}")
    assert world.step() == []  # pending: nothing to do

    world.admit("cluster-queue", "vlp-24", "google.com/tpu")
    started = world.step()
    assert kinds(started) == ["UpdateJob", "Event"]
    assert started[1] == act.Event("Started", "Admitted by clusterQueue cluster-queue")
    assert isinstance(started[0], act.UpdateJob)
    patch = started[0].patch
    assert patch["spec"]["suspend"] is False
    assert template_of(world.job)["spec"]["nodeSelector"] == TPU_LABELS
    world.job["status"] = {"replicatedJobsStatus": [{"name": "slice", "active": 3}]}
    assert world.step() == []  # running and still matching its Workload

    world.evict("Preempted", PREEMPTED)
    stopped = world.step()
    assert kinds(stopped) == ["UpdateJob", "Event"]
    assert stopped[1] == act.Event("Stopped", PREEMPTED)
    assert world.job["spec"] == original["spec"]  # suspended, templates as the user wrote them
    assert world.step() == []  # pods still terminating: keep the quota

    world.job["status"] = {"replicatedJobsStatus": [{"name": "slice", "active": 0}]}
    released = world.step()
    assert released == [act.ReleaseQuota("default", name, True, "Preempted", PREEMPTED)]
    assert world.step() == []

    world.admit("cluster-queue", "vlp-24", "google.com/tpu")
    assert kinds(world.step()) == ["UpdateJob", "Event"]
    world.job["status"] = {
        "replicatedJobsStatus": [{"name": "slice", "succeeded": 3}],
        "conditions": [{"type": "Completed", "status": "True", "message": "jobset completed"}],
    }
    finished = world.step()
    assert finished == [
        act.FinishWorkload("default", name, "Succeeded", "jobset completed"),
        act.Event("FinishedWorkload", f"Workload 'default/{name}' is declared finished"),
    ]
    # The event went out with the finish; dropping the finalizer does not announce it again.
    assert world.step() == [act.RemoveWorkloadFinalizer("default", name)]
    assert world.step() == []
    assert world.step() == []
    assert [reason for reason, _ in world.events].count("Started") == 2


def test_s3_job_is_stopped_in_three_writes_when_its_workload_loses_admission(
    job_kind: GenericJob,
) -> None:
    world = World(
        job_kind, example("s3/job.yaml", "sample-job"), ClusterFacts(flavors={"f": {"spec": {}}})
    )
    world.step()
    world.admit("dws-cluster-queue", "f", "nvidia.com/gpu")
    world.step()
    world.job["status"] = {"startTime": "2026-11-21T00:00:00Z", "active": 1}
    world.workload["status"]["conditions"] = [{"type": "QuotaReserved", "status": "False"}]
    actions = world.step()
    assert kinds(actions) == ["UpdateJob", "PatchJobStatus", "UpdateJob", "Event"]
    assert actions[-1] == act.Event("Stopped", "Not admitted by cluster queue")
    assert {**world.job, "status": {}} == {**example("s3/job.yaml", "sample-job"), "status": {}}


def test_changed_suspended_job_updates_its_unreserved_workload(job_kind: GenericJob) -> None:
    world = World(job_kind, example("s3/job.yaml", "sample-job"), FACTS)
    world.step()
    name = world.workload["metadata"]["name"]
    world.job["spec"]["parallelism"] = world.job["spec"]["completions"] = 3
    actions = world.step()
    assert kinds(actions) == ["UpdateWorkloadSpec", "Event"]
    assert actions[1] == act.Event(
        "UpdatedWorkload", f"Updated not matching Workload for suspended job: default/{name}"
    )
    assert world.workload["spec"]["podSets"][0]["count"] == 3
    assert world.step() == []


def test_running_job_with_a_foreign_workload_is_stopped_and_the_workload_deleted(
    job_kind: GenericJob,
) -> None:
    world = World(job_kind, example("s3/job.yaml", "sample-job"), FACTS)
    world.step()
    name = world.workload["metadata"]["name"]
    world.workload["status"] = {"conditions": [{"type": "QuotaReserved", "status": "True"}]}
    world.job["spec"]["suspend"] = False
    world.job["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    actions = world.step()
    # A batch Job stops in two writes: suspend (marked as stopping), then restore; the stale
    # Workload loses its finalizer before it is deleted, or it would stay Terminating.
    assert kinds(actions) == [
        "UpdateJob", "UpdateJob", "Event", "RemoveWorkloadFinalizer", "DeleteWorkload", "Event",
    ]  # fmt: skip
    assert actions[2] == act.Event(
        "Stopped", "No matching Workload; restoring pod templates according to existent Workload"
    )
    assert actions[5] == act.Event(
        "DeletedWorkload", f"Deleted not matching Workload: default/{name}"
    )
    assert kinds(world.step()) == ["CreateWorkload", "Event"]


def test_s2_annotation_queue_gets_a_deprecation_warning_event(jobset_kind: GenericJob) -> None:
    jobset = stored(next(manifests("s2/kueue-hotswap.yaml", "JobSet")))
    facts = ClusterFacts(priorities=Priorities({}, {"low-priority-job": 1000000}))
    actions = decide(jobset_kind, default_on_create(jobset_kind, jobset), [], facts)
    assert kinds(actions) == ["CreateWorkload", "Event", "Event"]
    assert isinstance(actions[0], act.CreateWorkload)
    workload = actions[0].workload
    assert (workload["spec"]["queueName"], workload["spec"]["priority"]) == (
        "default-queue",
        1000000,
    )
    warning = actions[2]
    assert isinstance(warning, act.Event)
    assert (warning.type, warning.reason) == ("Warning", "DeprecatedQueueNameAnnotation")


def test_missing_priority_class_blocks_creation_with_a_warning(jobset_kind: GenericJob) -> None:
    jobset = default_on_create(
        jobset_kind, example("s1/low-priority-jobset-standard.yaml", "low-priority")
    )
    assert decide(jobset_kind, jobset, [], ClusterFacts()) == [
        act.Event("PriorityClassNotFound", 'PriorityClass "low-priority" not found', "Warning")
    ]


def test_queue_name_change_of_a_suspended_job_moves_its_workload(job_kind: GenericJob) -> None:
    world = World(job_kind, example("s3/job.yaml", "sample-job"), FACTS)
    world.step()
    world.job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other"
    [update] = world.step()
    assert isinstance(update, act.UpdateWorkloadSpec)
    assert update.spec["queueName"] == "other"


def test_active_job_waits_for_its_pods_before_a_workload_is_created(job_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    job["status"] = {"active": 1}
    assert decide(job_kind, job, [], FACTS) == []


def test_unmanaged_skipped_and_child_jobs(job_kind: GenericJob, rayjob_kind: GenericJob) -> None:
    job = example("s3/job.yaml", "sample-job")
    job["spec"]["suspend"] = False
    assert decide(job_kind, job, [], ClusterFacts(ancestor_admitted=True)) == []
    assert kinds(decide(job_kind, job, [], ClusterFacts(ancestor_admitted=False))) == [
        "UpdateJob",
        "Event",
    ]
    del job["metadata"]["labels"]
    assert decide(job_kind, job, [], FACTS) == []
    from tests.jobframework.conftest import rayjob

    assert decide(rayjob_kind, rayjob(clusterSelector={"ray.io/cluster": "c"}), [], FACTS) == []


def test_deleted_job_and_deleted_workload(job_kind: GenericJob) -> None:
    world = World(job_kind, example("s3/job.yaml", "sample-job"), FACTS)
    world.step()
    name = world.workload["metadata"]["name"]
    assert job_deleted(list(world.workloads.values())) == [
        act.RemoveWorkloadFinalizer("default", name)
    ]
    world.admit("q", "vlp-24", "cpu")
    world.step()
    world.workload["metadata"]["deletionTimestamp"] = "2026-11-21T00:00:00Z"
    actions = world.step()
    assert kinds(actions) == ["UpdateJob", "UpdateJob", "Event", "RemoveWorkloadFinalizer"]
    assert actions[2] == act.Event("Stopped", "Workload is deleted")


def test_failed_job_finishes_its_workload_as_failed(mpijob_kind: GenericJob) -> None:
    world = World(mpijob_kind, example("s4/jobs/team-a-mpijob.yaml", "team-a-mpi"), FACTS)
    world.step()
    world.job["status"] = {"conditions": [{"type": "Failed", "status": "True", "message": "boom"}]}
    [finish, _] = world.step()
    assert finish == act.FinishWorkload(
        "team-a", world.workload["metadata"]["name"], "Failed", "boom"
    )


def test_conflicting_admission_finishes_the_workload(job_kind: GenericJob) -> None:
    world = World(job_kind, example("s3/job.yaml", "sample-job"), FACTS)
    world.step()
    world.admit("q", "vlp-24", "cpu")
    world.workload["status"]["admissionChecks"] = [
        {
            "name": "c",
            "podSetUpdates": [
                {"name": "main", "nodeSelector": {"cloud.google.com/gke-nodepool": "x"}}
            ],
        }
    ]
    [finish] = world.step()
    assert isinstance(finish, act.FinishWorkload)
    assert finish.reason == "FailedToStart"


def test_pods_ready_condition_when_waiting_for_pods(jobset_kind: GenericJob) -> None:
    facts = ClusterFacts(flavors=FACTS.flavors, wait_for_pods_ready=True)
    world = World(
        jobset_kind, example("s1/jobsets-multislice-standard.yaml", "multislice-2slice"), facts
    )
    world.step()
    assert world.step()[0] == act.SetWorkloadCondition(
        "default",
        world.workload["metadata"]["name"],
        {
            "type": "PodsReady",
            "status": "False",
            "reason": "WaitForStart",
            "message": "Not all pods are ready or succeeded",
        },
    )
    world.admit("q", "vlp-24", "google.com/tpu")
    assert kinds(world.step()) == ["UpdateJob", "Event"]
    world.job["status"] = {"replicatedJobsStatus": [{"name": "slice", "ready": 2, "active": 2}]}
    [ready] = world.step()
    assert isinstance(ready, act.SetWorkloadCondition)
    assert (ready.condition["status"], ready.condition["reason"]) == ("True", "Started")
    world.job["status"] = {"replicatedJobsStatus": [{"name": "slice", "ready": 1, "active": 2}]}
    [lost] = world.step()
    assert isinstance(lost, act.SetWorkloadCondition)
    assert lost.condition["reason"] == "WaitForRecovery"
    world.job["status"] = {"replicatedJobsStatus": [{"name": "slice", "ready": 2, "active": 2}]}
    [back] = world.step()
    assert isinstance(back, act.SetWorkloadCondition)
    assert back.condition["reason"] == "Recovered"


def test_reclaimable_pods_follow_succeeded_child_jobs(jobset_kind: GenericJob) -> None:
    world = World(
        jobset_kind, example("s1/jobsets-multislice-standard.yaml", "multislice-3slice"), FACTS
    )
    world.step()
    world.admit("q", "vlp-24", "google.com/tpu")
    world.step()
    world.job["status"] = {"replicatedJobsStatus": [{"name": "slice", "succeeded": 1, "active": 2}]}
    [reclaim] = world.step()
    assert isinstance(reclaim, act.SetReclaimablePods)
    assert [(p.name, p.count) for p in reclaim.pods] == [("slice", 2)]
    assert world.step() == []
