"""The pod integration's pure parts: the webhook's defaulting and exclusions, roles and pod
sets of a group (properties over generated groups), starting, stopping and finishing, and
the reconciler's decisions for a group, without an API server."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kq.config import PodOptions
from kq.jobframework import ClusterFacts, PodSetInfo, decide
from kq.jobframework.actions import CreateWorkload, Event
from kq.jobframework.io_facts import Caches, FactSource, JobFrameworkOptions
from kq.jobframework.webhook import default_on_create
from kq.runtime.store import Store
from kq_plugins.jobs import pod_group, pod_upkeep
from kq_plugins.jobs.batch_job import BatchJob
from kq_plugins.jobs.pod import ADMISSION_GATE, MANAGED_LABEL, POD_FINALIZER, Pod

POD = Pod()


def bare(name: str, cpu: str = "1", group: str = "", total: int = 0) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "lq"}
    annotations = {}
    if group:
        labels[pod_group.GROUP_NAME_LABEL] = group
        annotations[pod_group.GROUP_TOTAL_COUNT_ANNOTATION] = str(total)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    }


def created(name: str, cpu: str = "1", group: str = "", total: int = 0) -> dict[str, Any]:
    """As the webhook leaves it, with a phase."""
    out = POD.suspend(bare(name, cpu, group, total))
    out["status"] = {"phase": "Pending"}
    return out


def test_the_webhook_gates_labels_and_finalizes_a_managed_pod() -> None:
    out = default_on_create(POD, bare("p"))
    assert out["spec"]["schedulingGates"] == [{"name": ADMISSION_GATE}]
    assert out["metadata"]["labels"][MANAGED_LABEL] == "true"
    assert out["metadata"]["finalizers"] == [POD_FINALIZER]
    role = out["metadata"]["annotations"][pod_group.ROLE_HASH_ANNOTATION]
    assert role == pod_group.shape_hash(bare("p")["spec"])


def test_an_excluded_or_unnamed_pod_is_left_alone() -> None:
    assert default_on_create(POD, bare("p"), excluded=True) == bare("p")
    unnamed = bare("p")
    del unnamed["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert default_on_create(POD, unnamed) == unnamed


def _facts(options: PodOptions, namespaces: dict[str, dict[str, str]]) -> FactSource:
    stores = [Store() for _ in range(6)]
    for name, labels in namespaces.items():
        stores[4].upsert({"metadata": {"name": name, "labels": labels}})
    frameworks = ("batch/job", "pod")
    options_ = JobFrameworkOptions(frameworks=frameworks, pod_options=options)
    return FactSource(Caches(*stores), options_, {})


def test_system_namespaces_and_pod_options_exclude_pods() -> None:
    facts = _facts(
        PodOptions(
            namespace_selector={"matchLabels": {"pods": "yes"}},
            pod_selector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        ),
        {"team": {"pods": "yes"}, "other": {}},
    )
    assert facts.webhook_facts("kube-system", bare("p")).excluded
    assert facts.webhook_facts("kueue-system", bare("p")).excluded
    assert not facts.webhook_facts("team", bare("p")).excluded
    assert facts.webhook_facts("other", bare("p")).excluded
    skipped = bare("p")
    skipped["metadata"]["labels"]["skip"] = "1"
    assert facts.webhook_facts("team", skipped).excluded
    # Jobs are not pods: the pod options never apply to them.
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"labels": {"skip": "1"}}}
    assert not facts.webhook_facts("other", job).excluded


def test_the_role_hash_ignores_names_and_follows_requests() -> None:
    assert pod_group.role_hash(bare("a")) == pod_group.role_hash(bare("b"))
    assert pod_group.role_hash(bare("a")) != pod_group.role_hash(bare("a", cpu="2"))


@given(st.lists(st.sampled_from(["1", "2", "500m"]), min_size=1, max_size=12))
def test_a_group_has_one_pod_set_per_role_counting_every_pod(cpus: list[str]) -> None:
    pods = [created(f"p{i}", cpu, "g", len(cpus)) for i, cpu in enumerate(cpus)]
    group = POD.compose(pods)
    pod_sets = POD.pod_sets(group)
    assert [ps.name for ps in pod_sets] == sorted({pod_group.role_hash(p) for p in pods})
    assert sum(ps.count for ps in pod_sets) == len(pods)
    assert len(pod_sets) == len(set(cpus))
    assert pod_group.compose_error(group) is None


@given(st.integers(min_value=2, max_value=8), st.data())
def test_a_group_short_of_pods_gets_no_workload(total: int, data: st.DataObject) -> None:
    present = data.draw(st.integers(min_value=1, max_value=total - 1))
    group = POD.compose([created(f"p{i}", "1", "g", total) for i in range(present)])
    actions = decide(POD, group, [], ClusterFacts())
    assert actions == [
        Event("ErrWorkloadCompose", "'g' group has fewer runnable pods than expected", "Warning")
    ]


def test_a_complete_group_gets_one_workload_named_after_it_owned_by_each_pod() -> None:
    group = POD.compose([created(f"p{i}", "1", "g", 2) for i in range(2)])
    [create, _] = decide(POD, group, [], ClusterFacts())
    assert isinstance(create, CreateWorkload)
    workload = create.workload
    assert workload["metadata"]["name"] == "g"
    assert [o["name"] for o in workload["metadata"]["ownerReferences"]] == ["p0", "p1"]
    assert workload["metadata"]["annotations"][pod_group.IS_GROUP_WORKLOAD_ANNOTATION] == "true"
    assert POD.owns(group, workload)
    assert POD.matches(group, workload)


def test_starting_ungates_each_pod_with_its_roles_info() -> None:
    pods = [created("a", "1", "g", 2), created("b", "2", "g", 2)]
    group = POD.compose(pods)
    infos = [
        PodSetInfo(pod_group.role_hash(p), 1, node_selector={"pool": p["metadata"]["name"]})
        for p in pods
    ]
    started = POD.run_with_pod_set_info(group, infos)
    for pod in POD.members(started):
        assert "schedulingGates" not in pod["spec"]
        assert pod["spec"]["nodeSelector"] == {"pool": pod["metadata"]["name"]}
    assert not POD.is_suspended(started)


def test_stopping_marks_and_deletes_running_pods_only() -> None:
    running = created("run", "1", "g", 2)
    running["spec"].pop("schedulingGates")
    running["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    done = created("done", "1", "g", 2)
    done["status"] = {"phase": "Succeeded"}
    steps = POD.stop_members(POD.compose([running, done]), "WorkloadEvictedDueToPreempted", "m")
    assert [(s.member, s.delete) for s in steps] == [("run", False), ("run", True)]
    assert steps[0].status_patch is not None
    conditions = steps[0].status_patch["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["Ready", "TerminationTarget"]
    assert conditions[1]["reason"] == "WorkloadEvictedDueToPreempted"
    # A deleted Workload stops even finished pods.
    deleted = POD.stop_members(POD.compose([running, done]), "WorkloadDeleted", "m")
    assert {s.member for s in deleted} == {"run", "done"}


def test_a_group_finishes_when_all_succeed_or_an_unretriable_one_ends_it() -> None:
    pods = [created(f"p{i}", "1", "g", 2) for i in range(2)]
    for pod in pods:
        pod["status"] = {"phase": "Succeeded"}
    finished = POD.finished(POD.compose(pods))
    assert finished is not None
    assert (finished.success, finished.message) == (True, "Pods succeeded: 2/2.")
    pods[1]["status"] = {"phase": "Failed"}
    assert POD.finished(POD.compose(pods)) is None
    pods[1]["metadata"]["annotations"][pod_group.RETRIABLE_IN_GROUP_ANNOTATION] = "false"
    finished = POD.finished(POD.compose(pods))
    assert finished is not None
    assert finished.message == "Pods succeeded: 1/2."
    finalized = POD.finalize(POD.compose(pods))
    assert all(POD_FINALIZER not in p["metadata"]["finalizers"] for p in POD.members(finalized))


def _workload(count: int, role: str) -> dict[str, Any]:
    return {"metadata": {"name": "g"}, "spec": {"podSets": [{"name": role, "count": count}]}}


def _failed(pod: dict[str, Any]) -> dict[str, Any]:
    return {**pod, "status": {"phase": "Failed"}}


@given(st.integers(0, 4), st.integers(0, 4), st.integers(1, 4))
def test_the_upkeep_plan_keeps_each_role_at_its_count(active: int, failed: int, count: int) -> None:
    pods = [created(f"a{i}", "1", "g", count) for i in range(active)]
    pods += [_failed(created(f"f{i}", "1", "g", count)) for i in range(failed)]
    if not pods:
        return
    role = pod_group.role_hash(pods[0])
    found = pod_upkeep.plan(POD.compose(pods), _workload(count, role))
    assert len(found.excess) == max(0, active - count)
    assert found.absent == max(0, count - active)
    kept_failed = failed - len(found.replaced)
    # Failed pods are released only as far as running ones take their places.
    assert kept_failed == min(failed, max(0, count - active))
    assert all(p["status"]["phase"] == "Failed" for p in found.replaced)


def test_waiting_for_replacement_pods_follows_the_missing_pods() -> None:
    pods = [created("a", "1", "g", 2), _failed(created("b", "1", "g", 2))]
    workload = _workload(2, pod_group.role_hash(pods[0]))
    [waiting] = pod_upkeep.waiting_condition(POD.compose(pods), workload)
    assert (waiting["status"], waiting["reason"], waiting["message"]) == (
        "True",
        "PodsFailed",
        "Some Failed pods need replacement",
    )
    evicted = {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "by x"}
    workload["status"] = {"conditions": [evicted]}
    [waiting] = pod_upkeep.waiting_condition(POD.compose(pods), workload)
    assert (waiting["reason"], waiting["message"]) == ("Preempted", "by x")
    whole = [created("a", "1", "g", 2), created("c", "1", "g", 2)]
    workload["status"] = {"conditions": [{**waiting, "type": "WaitingForReplacementPods"}]}
    [ready] = pod_upkeep.waiting_condition(POD.compose(whole), workload)
    assert (ready["status"], ready["reason"]) == ("False", "PodsReady")
    fresh = _workload(2, pod_group.role_hash(whole[0]))
    assert pod_upkeep.waiting_condition(POD.compose(whole), fresh) == []


def test_a_pod_is_a_top_level_job_to_the_controller() -> None:
    """Owned by a Job kq runs, a pod marked managed is still reconciled as its own job (the
    webhook never marks such pods), where a Job's child Job would wait for its ancestor."""
    stores = [Store() for _ in range(6)]
    jobs = Store()
    queued = {"kueue.x-k8s.io/queue-name": "lq"}
    jobs.upsert({"metadata": {"name": "j", "namespace": "ns", "uid": "uid-j", "labels": queued}})
    integrations = {("batch/v1", "Job"): (BatchJob(), jobs)}
    options = JobFrameworkOptions(frameworks=("batch/job", "pod"))
    facts = FactSource(Caches(*stores), options, integrations)
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "uid-j"}
    owned = created("p")
    owned["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
    assert facts.facts(owned).ancestor_admitted is None
    assert facts.webhook_facts("ns", owned).ancestor_managed
    child = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {**owned["metadata"]}}
    assert facts.facts(child).ancestor_admitted is False


def _fast(pod: dict[str, Any]) -> dict[str, Any]:
    notes = pod["metadata"]["annotations"]
    notes[pod_group.FAST_ADMISSION_ANNOTATION] = "true"
    return pod


@given(st.integers(min_value=2, max_value=8), st.data())
def test_a_fast_admission_group_gets_its_workload_with_its_first_pod(
    total: int, data: st.DataObject
) -> None:
    present = data.draw(st.integers(min_value=1, max_value=total))
    pods = [_fast(created(f"p{i}", "1", "g", total)) for i in range(present)]
    group = POD.compose(pods)
    assert pod_group.compose_error(group) is None
    [create, _] = decide(POD, group, [], ClusterFacts())
    assert isinstance(create, CreateWorkload)
    [pod_set] = create.workload["spec"]["podSets"]
    # The whole group's quota, under the first pod's role.
    assert (pod_set["name"], pod_set["count"]) == (pod_group.role_hash(pods[0]), total)
    assert POD.matches(group, create.workload)
    # Pods not created yet are not missing: only an empty role waits for replacements.
    assert pod_upkeep.plan(group, create.workload).absent == 0
    failed = POD.compose([_failed(p) for p in pods])
    assert pod_upkeep.plan(failed, create.workload).absent == 1


def test_a_fast_admission_group_without_a_runnable_pod_gets_no_workload() -> None:
    group = POD.compose([_failed(_fast(created("p0", "1", "g", 2)))])
    assert pod_group.compose_error(group) == "failed to find a runnable pod in the group"
