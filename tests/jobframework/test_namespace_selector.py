"""``managedJobsNamespaceSelector`` in the reconciler and the mutating webhook, as upstream.

The reconciler leaves every job in a namespace outside the selector alone, queue name or not
(ManagedJobsNamespaceSelectorAlwaysRespected, GA in Kueue v0.19). The webhook still suspends
a job that names a queue; the selector decides only for jobs without one (under
manageJobsWithoutQueueName) and whether the LocalQueue ``default`` is filled in.
"""

from __future__ import annotations

from typing import Any

from kq.jobframework import ClusterFacts, GenericJob, decide
from kq.jobframework.actions import CreateWorkload
from kq.jobframework.webhook import default_on_create
from tests.jobframework.conftest import example

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def unsuspended(queue: str | None) -> dict[str, Any]:
    job = example("s3/job.yaml", "sample-job")
    job["spec"]["suspend"] = False
    if queue is None:
        del job["metadata"]["labels"][QUEUE_LABEL]
    else:
        job["metadata"]["labels"][QUEUE_LABEL] = queue
    return job


def kinds(job_kind: GenericJob, job: dict[str, Any], facts: ClusterFacts) -> list[str]:
    job = {**job, "spec": {**job["spec"], "suspend": True}}
    return [type(a).__name__ for a in decide(job_kind, job, [], facts)]


def test_the_reconciler_skips_every_job_outside_the_selector(job_kind: GenericJob) -> None:
    outside = ClusterFacts(namespace_managed=False, manage_jobs_without_queue_name=True)
    inside = ClusterFacts(namespace_managed=True, manage_jobs_without_queue_name=True)
    for queue in ("lq", None):
        assert kinds(job_kind, unsuspended(queue), outside) == []
        assert kinds(job_kind, unsuspended(queue), inside) == ["CreateWorkload", "Event"]
    assert kinds(job_kind, unsuspended(None), ClusterFacts(namespace_managed=True)) == []


def test_the_webhook_suspends_queue_named_jobs_in_any_namespace(job_kind: GenericJob) -> None:
    for managed in (True, False):
        out = default_on_create(job_kind, unsuspended("lq"), namespace_managed=managed)
        assert out["spec"]["suspend"] is True


def test_the_webhook_manages_unnamed_jobs_only_in_selected_namespaces(
    job_kind: GenericJob,
) -> None:
    def suspended(managed: bool) -> bool:
        job = default_on_create(
            job_kind,
            unsuspended(None),
            manage_jobs_without_queue_name=True,
            namespace_managed=managed,
        )
        return bool(job["spec"]["suspend"])

    assert suspended(True)
    assert not suspended(False)


def test_the_default_local_queue_applies_only_in_selected_namespaces(
    job_kind: GenericJob,
) -> None:
    def labelled(managed: bool) -> dict[str, str]:
        job = default_on_create(
            job_kind, unsuspended(None), namespace_managed=managed, default_local_queue_exists=True
        )
        return dict(job["metadata"].get("labels") or {})

    assert labelled(True).get(QUEUE_LABEL) == "default"
    assert QUEUE_LABEL not in labelled(False)


def test_a_job_without_queue_name_gets_a_workload_without_one(job_kind: GenericJob) -> None:
    """The API refuses ``queueName: ""``; upstream's field is omitted when empty."""
    facts = ClusterFacts(namespace_managed=True, manage_jobs_without_queue_name=True)
    job = unsuspended(None)
    job = {**job, "spec": {**job["spec"], "suspend": True}}
    create = decide(job_kind, job, [], facts)[0]
    assert isinstance(create, CreateWorkload)
    assert "queueName" not in create.workload["spec"]
