"""A Workload's priority follows its job's ``kueue.x-k8s.io/priority-class`` label.

Upstream (``UpdateWorkloadPriority``): the label may change on a suspended or a running job
(adding it to a running job and removing it are refused by the webhook); a Workload whose
priority came from a pod PriorityClass does not follow it, and neither does one that holds
quota without any class, because the API server refuses to add a class reference then.
"""

from __future__ import annotations

from typing import Any

import pytest

from kq.jobframework import ClusterFacts, GenericJob
from kq.jobframework import actions as act
from kq.jobframework.priority import Priorities
from kq.jobframework.webhook import validate_on_update
from tests.jobframework.conftest import example
from tests.jobframework.world import World

CLASS_LABEL = "kueue.x-k8s.io/priority-class"
WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
CLASSES = Priorities({"low": 1, "high": 9}, {"low-priority": 100})
FACTS = ClusterFacts(
    flavors={"vlp-24": {"metadata": {"name": "vlp-24"}, "spec": {"nodeLabels": {}}}},
    priorities=CLASSES,
)


def world_with(jobset_kind: GenericJob, name: str, wpc: str | None) -> World:
    source = (
        "low-priority-jobset-standard.yaml"
        if name == "low-priority"
        else ("jobsets-multislice-standard.yaml")
    )
    jobset = example(f"s1/{source}", name)
    if wpc is not None:
        jobset["metadata"]["labels"][CLASS_LABEL] = wpc
    world = World(jobset_kind, jobset, FACTS)
    world.step()
    return world


def relabel(world: World, wpc: str) -> list[act.Action]:
    world.job["metadata"]["labels"][CLASS_LABEL] = wpc
    return world.step()


def priority_of(world: World) -> tuple[Any, Any, Any]:
    spec = world.workload["spec"]
    return spec.get("priorityClassName"), spec.get("priorityClassSource"), spec.get("priority")


@pytest.mark.parametrize("admitted", [False, True], ids=["pending", "admitted"])
def test_a_changed_class_label_reaches_the_workload_with_an_event(
    jobset_kind: GenericJob, admitted: bool
) -> None:
    world = world_with(jobset_kind, "multislice-1slice", "low")
    if admitted:
        world.admit("cluster-queue", "vlp-24", "google.com/tpu")
        world.step()
    name = world.workload["metadata"]["name"]
    actions = relabel(world, "high")
    assert [type(a).__name__ for a in actions] == ["UpdateWorkloadSpec", "Event"]
    assert actions[1] == act.Event(
        "UpdatedWorkload", f"Updated workload priority class: default/{name}"
    )
    assert priority_of(world) == ("high", WPC_SOURCE, 9)
    assert world.step() == []


def test_a_changed_class_value_reaches_the_workload(jobset_kind: GenericJob) -> None:
    world = world_with(jobset_kind, "multislice-1slice", "low")
    world.facts = ClusterFacts(priorities=Priorities({"low": 3}, {}))
    [update] = world.step()
    assert isinstance(update, act.UpdateWorkloadSpec)
    assert priority_of(world) == ("low", WPC_SOURCE, 3)


def test_a_pending_workload_without_a_class_takes_one(jobset_kind: GenericJob) -> None:
    world = world_with(jobset_kind, "multislice-1slice", None)
    assert priority_of(world) == (None, None, 0)
    assert [type(a).__name__ for a in relabel(world, "high")] == ["UpdateWorkloadSpec", "Event"]
    assert priority_of(world) == ("high", WPC_SOURCE, 9)


def test_a_workload_holding_quota_without_a_class_keeps_its_priority(
    jobset_kind: GenericJob,
) -> None:
    world = world_with(jobset_kind, "multislice-1slice", None)
    world.admit("cluster-queue", "vlp-24", "google.com/tpu")
    world.step()
    world.job["spec"]["suspend"] = True  # a suspended job may gain the label (webhook)
    assert not any(isinstance(a, act.UpdateWorkloadSpec) for a in relabel(world, "high"))
    assert priority_of(world) == (None, None, 0)


def test_a_pod_priority_class_does_not_follow_the_label(jobset_kind: GenericJob) -> None:
    world = world_with(jobset_kind, "low-priority", None)
    assert priority_of(world) == ("low-priority", "scheduling.k8s.io/priorityclass", 100)
    assert relabel(world, "high") == []
    assert priority_of(world) == ("low-priority", "scheduling.k8s.io/priorityclass", 100)


def test_a_missing_class_blocks_the_reconcile_with_a_warning(jobset_kind: GenericJob) -> None:
    world = world_with(jobset_kind, "multislice-1slice", "low")
    world.admit("cluster-queue", "vlp-24", "google.com/tpu")
    actions = relabel(world, "urgent")
    # Not started: the reconcile stops at the priority, as upstream's returns an error.
    assert actions == [
        act.Event(
            "WorkloadPriorityClassNotFound", 'WorkloadPriorityClass "urgent" not found', "Warning"
        )
    ]
    assert world.job["spec"].get("suspend") is True
    assert priority_of(world) == ("low", WPC_SOURCE, 1)


def test_the_webhook_allows_a_change_and_refuses_adding_to_running_or_removing(
    jobset_kind: GenericJob,
) -> None:
    def errors(old_class: str | None, new_class: str | None, suspended: bool) -> list[str]:
        jobs = []
        for wpc in (old_class, new_class):
            jobset = example("s1/jobsets-multislice-standard.yaml", "multislice-1slice")
            jobset["spec"]["suspend"] = suspended
            if wpc is not None:
                jobset["metadata"]["labels"][CLASS_LABEL] = wpc
            jobs.append(jobset)
        return [e.detail for e in validate_on_update(jobset_kind, jobs[0], jobs[1])]

    assert errors("low", "high", suspended=False) == []
    assert errors(None, "high", suspended=True) == []
    assert errors(None, "high", suspended=False) == [
        "WorkloadPriorityClass cannot be added to a non-suspended workload"
    ]
    assert errors("low", None, suspended=True) == [
        "WorkloadPriorityClass cannot be removed from a workload"
    ]


def test_a_class_and_queue_change_together_keep_both(jobset_kind: GenericJob) -> None:
    world = world_with(jobset_kind, "multislice-1slice", "low")
    world.job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other-queue"
    relabel(world, "high")
    assert priority_of(world) == ("high", WPC_SOURCE, 9)
    assert world.workload["spec"]["queueName"] == "other-queue"
