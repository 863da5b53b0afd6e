"""The controller's parts without an API server: facts from caches, conditions, guards."""

from __future__ import annotations

from typing import Any, cast

from kq.config import KqConfig, WaitForPodsReady
from kq.jobframework import GenericJob
from kq.jobframework.io_apply import with_conditions
from kq.jobframework.io_facts import Caches, FactSource, JobFrameworkOptions
from kq.jobframework.io_reconciler import Enqueuer, JobKind, JobReconciler
from kq.runtime.client import KubeClient
from kq.runtime.events import EventRecorder
from kq.runtime.informer import Informer
from kq.runtime.reconciler import Result
from kq.runtime.resources import JOBS
from kq.runtime.store import Change, EventType, Store
from kq.runtime.workqueue import WorkQueue
from kq.webhooks import WebhookFacts


class NoClient:
    """Any request fails the test: the code under test must not write."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected API call: {name}")


def caches(**objects: list[dict[str, Any]]) -> Caches:
    stores = {
        field: Store()
        for field in ("workloads", "flavors", "workload_priority_classes", "priority_classes")
    }
    stores["namespaces"] = Store()
    stores["local_queues"] = Store()
    for field, items in objects.items():
        for item in items:
            stores[field].upsert(item)
    return Caches(**stores)


def obj(name: str, namespace: str | None = None, **fields: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if namespace:
        metadata["namespace"] = namespace
    metadata.update(fields.pop("metadata", {}))
    return {"metadata": metadata, **fields}


def job(name: str = "j", ns: str = "team-a", **metadata: Any) -> dict[str, Any]:
    return obj(
        name,
        ns,
        apiVersion="batch/v1",
        kind="Job",
        metadata={"labels": {"kueue.x-k8s.io/queue-name": "lq"}, **metadata},
        spec={"suspend": True, "template": {"spec": {"containers": [{"name": "c"}]}}},
    )


def owned_by(owner: dict[str, Any], **fields: Any) -> dict[str, Any]:
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    return {"ownerReferences": [ref], **fields}


ADMITTED = {"conditions": [{"type": "Admitted", "status": "True"}]}


def test_options_follow_the_configuration() -> None:
    config = KqConfig(
        namespace="kq-system",
        manage_jobs_without_queue_name=True,
        wait_for_pods_ready=WaitForPodsReady(enable=True),
        frameworks=("batch/job", "jobset.x-k8s.io/jobset"),
    )
    options = JobFrameworkOptions.from_config(config)
    assert options.frameworks == ("batch/job", "jobset.x-k8s.io/jobset")
    assert options.manage_jobs_without_queue_name
    assert options.wait_for_pods_ready
    assert options.events_namespace == "kq-system"
    source = FactSource(caches(), options, {})
    assert not source.namespace_managed("kq-system")
    assert not source.namespace_managed("kube-system")
    assert source.namespace_managed("team-a")


def test_facts_carry_flavors_priorities_and_namespace_labels() -> None:
    options = JobFrameworkOptions(managed_jobs_namespace_selector={"matchLabels": {"kq": "on"}})
    source = FactSource(
        caches(
            flavors=[obj("spot", spec={"nodeLabels": {"a": "b"}})],
            workload_priority_classes=[obj("high", value=1000)],
            priority_classes=[obj("pods", value=5), obj("default", value=1, globalDefault=True)],
            namespaces=[obj("team-a", metadata={"labels": {"kq": "on"}}), obj("team-b")],
        ),
        options,
        {},
    )
    facts = source.facts(job())
    assert facts.flavors == {"spot": obj("spot", spec={"nodeLabels": {"a": "b"}})}
    assert dict(facts.priorities.workload_classes) == {"high": 1000}
    assert dict(facts.priorities.pod_classes) == {"pods": 5, "default": 1}
    assert list(facts.priorities.global_defaults) == ["default"]
    assert facts.namespace_managed
    assert facts.ancestor_admitted is None
    assert not source.facts(job(ns="team-b")).namespace_managed


def test_a_namespace_missing_from_the_cache_is_judged_by_its_name() -> None:
    """The embedded API server keeps no Namespace ``default``; a real one's cache may lag."""
    source = FactSource(caches(), JobFrameworkOptions(), {})
    assert source.facts(job(ns="default")).namespace_managed
    assert source.webhook_facts("default", job(ns="default")).namespace_managed
    assert not source.facts(job(ns="kube-system")).namespace_managed
    labelled = FactSource(
        caches(),
        JobFrameworkOptions(managed_jobs_namespace_selector={"matchLabels": {"a": "b"}}),
        {},
    )
    assert not labelled.facts(job(ns="default")).namespace_managed


async def test_namespace_and_priority_class_changes_enqueue_the_jobs_they_concern(
    integrations: dict[str, GenericJob],
) -> None:
    jobs = Store()
    wpc_label = {"kueue.x-k8s.io/queue-name": "lq", "kueue.x-k8s.io/priority-class": "high"}
    labelled = job("a", labels=wpc_label)
    for item in (labelled, job("b"), job("c", ns="team-b")):
        jobs.upsert(item)
    informer = Informer(cast(KubeClient, NoClient()), JOBS)
    informer.store = jobs
    kinds = {"batch/job": JobKind("batch/job", integrations["batch/job"], JOBS, informer)}
    queue = WorkQueue("test")
    enqueue = Enqueuer(queue, kinds, caches())

    async def keys() -> set[str]:
        taken = set()
        while len(queue):
            item = await queue.get()
            queue.done(item.key)
            taken.add(item.key)
        return taken

    team_a = obj("team-a", metadata={"labels": {"kq": "on"}})
    enqueue.namespace(Change(EventType.MODIFIED, team_a, obj("team-a")))
    assert await keys() == {"batch/job/team-a/a", "batch/job/team-a/b"}
    enqueue.namespace(Change(EventType.MODIFIED, team_a, team_a))  # status only
    enqueue.namespace(Change(EventType.DELETED, team_a, None))
    assert await keys() == set()

    wpc = obj("high", value=10)
    enqueue.workload_priority_class(Change(EventType.ADDED, wpc, None))
    assert await keys() == {"batch/job/team-a/a"}
    enqueue.workload_priority_class(Change(EventType.MODIFIED, {**wpc, "value": 20}, wpc))
    assert await keys() == {"batch/job/team-a/a"}
    enqueue.workload_priority_class(Change(EventType.MODIFIED, wpc, wpc))
    assert await keys() == set()


def test_a_child_waits_for_its_managed_ancestors_admission(
    integrations: dict[str, GenericJob],
) -> None:
    jobset = obj(
        "js",
        "team-a",
        apiVersion="jobset.x-k8s.io/v1alpha2",
        kind="JobSet",
        metadata={"labels": {"kueue.x-k8s.io/queue-name": "lq"}},
    )
    jobsets = Store()
    child = job("js-workers-0", **owned_by(jobset))
    workload = obj("jobset-js", "team-a", metadata=owned_by(jobset))
    stores = caches(workloads=[workload])
    source = FactSource(
        stores,
        JobFrameworkOptions(),
        {("jobset.x-k8s.io/v1alpha2", "JobSet"): (integrations["jobset.x-k8s.io/jobset"], jobsets)},
    )
    # Not cached yet: wait rather than give the child a Workload of its own.
    assert source.ancestor_admitted(child) is False
    jobsets.upsert(jobset)
    assert source.ancestor_admitted(child) is False
    stores.workloads.upsert({**workload, "status": ADMITTED})
    assert source.ancestor_admitted(child) is True
    jobsets.upsert({**jobset, "metadata": {**jobset["metadata"], "labels": {}}})
    assert source.ancestor_admitted(child) is None, "an unmanaged owner manages nothing"
    assert source.ancestor_admitted(job()) is None


def test_webhook_facts_come_from_the_same_caches(integrations: dict[str, GenericJob]) -> None:
    jobset = obj("js", "team-a", apiVersion="jobset.x-k8s.io/v1alpha2", kind="JobSet")
    jobset["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "lq"}
    jobsets = Store()
    jobsets.upsert(jobset)
    options = JobFrameworkOptions(manage_jobs_without_queue_name=True)
    source = FactSource(
        caches(local_queues=[obj("default", "team-a")]),
        options,
        {("jobset.x-k8s.io/v1alpha2", "JobSet"): (integrations["jobset.x-k8s.io/jobset"], jobsets)},
    )
    child = job("js-workers-0", **owned_by(jobset))
    del child["metadata"]["namespace"]  # as on CREATE
    assert source.webhook_facts("team-a", child) == WebhookFacts(
        manage_jobs_without_queue_name=True,
        namespace_managed=True,
        default_local_queue_exists=True,
        ancestor_managed=True,
    )
    assert source.webhook_facts("team-b", job(ns="team-b")) == WebhookFacts(
        manage_jobs_without_queue_name=True
    )
    assert not source.webhook_facts("kueue-system", job()).namespace_managed


def test_with_conditions_moves_the_transition_time_only_on_a_status_change() -> None:
    old = [
        {
            "type": "A",
            "status": "True",
            "reason": "r",
            "lastTransitionTime": "2020-01-01T00:00:00Z",
        },
        {
            "type": "B",
            "status": "True",
            "reason": "r",
            "lastTransitionTime": "2020-01-01T00:00:00Z",
        },
    ]
    new = with_conditions(
        old,
        [
            {"type": "A", "status": "True", "reason": "again", "message": "m"},
            {"type": "B", "status": "False", "reason": "off"},
            {"type": "C", "status": "True", "reason": "new"},
        ],
        now=1767225600.0,
    )
    assert new == [
        {
            "type": "A",
            "status": "True",
            "reason": "again",
            "message": "m",
            "lastTransitionTime": "2020-01-01T00:00:00Z",
        },
        {
            "type": "B",
            "status": "False",
            "reason": "off",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
        {
            "type": "C",
            "status": "True",
            "reason": "new",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
    ]


def reconciler(
    integrations: dict[str, GenericJob], stores: Caches, jobs: Store, leader: bool
) -> JobReconciler:
    client = cast(KubeClient, NoClient())
    informer = Informer(client, JOBS)
    informer.store = jobs
    kind = JobKind("batch/job", integrations["batch/job"], JOBS, informer)
    return JobReconciler(
        client,
        {"batch/job": kind},
        stores,
        FactSource(stores, JobFrameworkOptions(), {}),
        EventRecorder(client),
        lambda: leader,
    )


async def test_no_writes_unless_leader(integrations: dict[str, GenericJob]) -> None:
    jobs = Store()
    jobs.upsert(job())
    subject = reconciler(integrations, caches(), jobs, leader=False)
    assert await subject.reconcile("batch/job/team-a/j") == Result()


async def test_an_unknown_flavor_retries_later_with_backoff(
    integrations: dict[str, GenericJob],
) -> None:
    jobs = Store()
    the_job = job()
    jobs.upsert(the_job)
    pod_sets = [ps.to_dict() for ps in integrations["batch/job"].pod_sets(the_job)]
    workload = obj(
        "job-j",
        "team-a",
        metadata=owned_by(the_job),
        spec={"queueName": "lq", "podSets": pod_sets},
        status={
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "flavors": {"cpu": "missing"}}],
            },
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
            ],
        },
    )
    stores = caches(workloads=[workload], namespaces=[obj("team-a")])
    subject = reconciler(integrations, stores, jobs, leader=True)
    first = await subject.reconcile("batch/job/team-a/j")
    second = await subject.reconcile("batch/job/team-a/j")
    assert first.requeue_after is not None
    assert second.requeue_after is not None
    assert 0.5 <= first.requeue_after <= 0.75
    assert 1.0 <= second.requeue_after <= 1.5
