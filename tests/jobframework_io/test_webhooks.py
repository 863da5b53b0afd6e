"""AdmissionReview handlers on the scenarios' manifests: patches, denials, warnings."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kq.api.clusterqueue import ClusterQueue, parse_cluster_queue
from kq.jobframework import GenericJob
from kq.jobframework.io_facts import Caches, FactSource, JobFrameworkOptions
from kq.jobframework.queue_name import DEPRECATED_ANNOTATION_MESSAGE
from kq.runtime.store import Store
from kq.webhooks import (
    MUTATE_JOBS,
    VALIDATE_JOBS,
    VALIDATE_KUEUE,
    JobWebhooks,
    WebhookFacts,
    routes,
    validate_kueue,
)
from kq.webhooks.kueue import (
    FAIR_SHARING_WARNING,
    NAMESPACE_SELECTOR_WARNING,
    RECLAIM_OUT_OF_COHORT_WARNING,
)
from kq.webhooks.routes import for_server
from tests.jobframework.conftest import example, manifests
from tests.jobframework_io.patching import apply_patch, decoded_patch


def review(obj: dict[str, Any], operation: str = "CREATE", old: Any = None) -> dict[str, Any]:
    """An AdmissionReview request as the API server sends it for ``obj``."""
    group, _, version = obj["apiVersion"].rpartition("/")
    request: dict[str, Any] = {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "operation": operation,
        "namespace": obj["metadata"].get("namespace", "default"),
        "name": obj["metadata"]["name"],
        "object": obj,
        "oldObject": old,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def response(result: dict[str, Any]) -> dict[str, Any]:
    assert result["apiVersion"] == "admission.k8s.io/v1"
    assert result["kind"] == "AdmissionReview"
    assert result["response"]["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002"
    body: dict[str, Any] = result["response"]
    return body


@pytest.fixture
def hooks(integrations: dict[str, GenericJob]) -> JobWebhooks:
    return JobWebhooks(integrations)


def unsuspended(job: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(job)
    if out["kind"] == "MPIJob":
        out["spec"]["runPolicy"]["suspend"] = False
    else:
        out["spec"]["suspend"] = False
    return out


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("s1/jobsets-multislice-standard.yaml", "multislice-1slice"),
        ("s1/low-priority-jobset-standard.yaml", "low-priority"),
        ("s3/job.yaml", "sample-job"),
        ("s4/jobs/team-a-mpijob.yaml", "team-a-mpi"),
        ("s4/jobs/team-a-cpu-only-job.yaml", "team-a-cpu-only"),
    ],
)
def test_mutate_patch_suspends_the_job(
    hooks: JobWebhooks, integrations: dict[str, GenericJob], path: str, name: str
) -> None:
    job = unsuspended(example(path, name))
    body = response(hooks.mutate(review(job)))
    assert body["allowed"] is True
    result = apply_patch(job, decoded_patch(body))
    integration = next(i for i in integrations.values() if i.GVK.kind == job["kind"])
    assert integration.is_suspended(result)
    assert result == integration.suspend(job)


def test_s2_jobsets_naming_the_queue_by_annotation_are_suspended(hooks: JobWebhooks) -> None:
    for jobset in manifests("s2/kueue-hotswap.yaml", "JobSet"):
        jobset["metadata"]["namespace"] = "default"
        body = response(hooks.mutate(review(jobset)))
        assert decoded_patch(body) == [{"op": "add", "path": "/spec/suspend", "value": True}]


def test_mutate_leaves_suspended_unmanaged_and_updated_jobs_alone(hooks: JobWebhooks) -> None:
    suspended = example("s3/job.yaml", "sample-job")
    assert "patch" not in response(hooks.mutate(review(suspended)))
    unmanaged = unsuspended(suspended)
    del unmanaged["metadata"]["labels"]
    assert "patch" not in response(hooks.mutate(review(unmanaged)))
    running = unsuspended(suspended)
    assert "patch" not in response(hooks.mutate(review(running, "UPDATE", running)))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert response(hooks.mutate(review(pod))) == {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "allowed": True,
        "status": {"code": 200},
    }


def test_mutate_puts_a_job_without_queue_in_the_default_local_queue(
    integrations: dict[str, GenericJob],
) -> None:
    hooks = JobWebhooks(integrations, lambda ns, job: WebhookFacts(default_local_queue_exists=True))
    job = unsuspended(example("s3/job.yaml", "sample-job"))
    job["metadata"]["labels"] = {"team": "a"}
    ops = decoded_patch(response(hooks.mutate(review(job))))
    assert {
        "op": "add",
        "path": "/metadata/labels/kueue.x-k8s.io~1queue-name",
        "value": "default",
    } in ops
    patched = apply_patch(job, ops)
    assert patched["metadata"]["labels"] == {"team": "a", "kueue.x-k8s.io/queue-name": "default"}
    assert patched["spec"]["suspend"] is True


def test_mutate_leaves_jobs_of_a_managed_ancestor_alone(
    integrations: dict[str, GenericJob],
) -> None:
    hooks = JobWebhooks(integrations, lambda ns, job: WebhookFacts(ancestor_managed=True))
    job = unsuspended(example("s3/job.yaml", "sample-job"))
    assert "patch" not in response(hooks.mutate(review(job)))


def test_validate_denies_an_invalid_queue_name_with_the_upstream_message(
    hooks: JobWebhooks,
) -> None:
    job = example("s3/job.yaml", "sample-job")
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "Bad_Queue"
    body = response(hooks.validate(review(job)))
    assert body["allowed"] is False
    assert body["status"] == {
        "code": 403,
        "reason": "Forbidden",
        "message": (
            'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "Bad_Queue": a lowercase '
            "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'example.com', regex "
            "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
            "[a-z0-9])?)*')"
        ),
    }


def test_validate_update_aggregates_errors_like_kubernetes(hooks: JobWebhooks) -> None:
    old = unsuspended(example("s4/jobs/team-a-cpu-only-job.yaml", "team-a-cpu-only"))
    old["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-b"
    del new["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
    body = response(hooks.validate(review(new, "UPDATE", old)))
    assert body["allowed"] is False
    assert body["status"]["message"] == (
        '[metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "team-b": field is '
        'immutable, metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "": '
        "WorkloadPriorityClass cannot be removed from a workload]"
    )


def test_validate_allows_a_valid_job_without_warnings(hooks: JobWebhooks) -> None:
    job = example("s3/job.yaml", "sample-job")
    body = response(hooks.validate(review(job)))
    assert body == {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "allowed": True,
        "status": {"code": 200},
    }
    assert response(hooks.validate(review(job, "DELETE", job)))["allowed"] is True


def test_validate_warns_about_the_deprecated_queue_annotation(hooks: JobWebhooks) -> None:
    jobset = next(manifests("s2/kueue-hotswap.yaml", "JobSet"))
    body = response(hooks.validate(review(jobset)))
    assert body["allowed"] is True
    assert body["warnings"] == [DEPRECATED_ANNOTATION_MESSAGE]
    jobset["metadata"]["annotations"]["kueue.x-k8s.io/queue-name"] = "Not Valid"
    body = response(hooks.validate(review(jobset)))
    assert body["allowed"] is False
    assert body["status"]["message"].startswith(
        'metadata.annotations[kueue.x-k8s.io/queue-name]: Invalid value: "Not Valid"'
    )
    assert body["warnings"] == [DEPRECATED_ANNOTATION_MESSAGE]


def test_s2_cluster_queue_is_allowed_with_both_warnings() -> None:
    [cq] = manifests("s2/kueue.yaml", "ClusterQueue")
    body = response(validate_kueue(review(cq)))
    assert body["allowed"] is True
    assert body["warnings"] == [
        "spec.preemption.reclaimOutOfCohort is not a Kueue field; kq accepts it and does not "
        "act on it",
        "spec.namespaceSelector is unset: kq admits workloads from all namespaces (Kueue admits "
        "from none); set it explicitly",
    ]
    assert body["warnings"] == [RECLAIM_OUT_OF_COHORT_WARNING, NAMESPACE_SELECTOR_WARNING]


def test_cluster_queues_with_a_namespace_selector_get_no_warning() -> None:
    for path in ("s1/kueue.yaml", "s4/cluster-queues.yaml"):
        for cq in manifests(path, "ClusterQueue"):
            body = response(validate_kueue(review(cq, "UPDATE", cq)))
            assert body["allowed"] is True
            assert "warnings" not in body, cq["metadata"]["name"]


def test_other_kueue_objects_are_allowed_without_warnings() -> None:
    for obj in manifests("s2/kueue.yaml"):
        if obj["kind"] != "ClusterQueue":
            assert "warnings" not in response(validate_kueue(review(obj)))


def test_routes_name_the_documented_paths(hooks: JobWebhooks) -> None:
    table = routes(hooks)
    assert set(table) == {"/mutate/jobs", "/validate/jobs", "/validate/kueue"}
    assert table[MUTATE_JOBS] == hooks.mutate
    assert table[VALIDATE_JOBS] == hooks.validate
    assert table[VALIDATE_KUEUE] is validate_kueue


async def test_handlers_adapt_to_the_webhook_server(hooks: JobWebhooks) -> None:
    """The server passes the request and wraps the returned fields with the uid itself."""
    job = unsuspended(example("s3/job.yaml", "sample-job"))
    handle = for_server(hooks.mutate)
    fields = await handle(review(job)["request"])
    assert "uid" not in fields
    assert fields["allowed"] is True
    assert apply_patch(job, decoded_patch(fields))["spec"]["suspend"] is True


def test_mutate_honours_the_managed_jobs_namespace_selector(
    integrations: dict[str, GenericJob],
) -> None:
    """Unlabelled jobs are suspended (manageJobsWithoutQueueName) only in selected namespaces;
    a job naming a queue is suspended everywhere, as upstream's webhook does."""
    namespaces = Store()
    for ns, ns_labels in (("team-a", {"kq": "on"}), ("team-b", {})):
        namespaces.upsert({"metadata": {"name": ns, "labels": ns_labels}})
    caches = Caches(Store(), Store(), Store(), Store(), namespaces, Store())
    options = JobFrameworkOptions(
        manage_jobs_without_queue_name=True,
        managed_jobs_namespace_selector={"matchLabels": {"kq": "on"}},
    )
    hooks = JobWebhooks(integrations, FactSource(caches, options, {}).webhook_facts)

    def suspended(ns: str, queue: bool) -> bool:
        job = unsuspended(example("s3/job.yaml", "sample-job"))
        job["metadata"]["namespace"] = ns
        if not queue:
            del job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
        patched = apply_patch(job, decoded_patch(response(hooks.mutate(review(job)))))
        return bool(patched["spec"]["suspend"])

    assert suspended("team-a", queue=False)
    assert not suspended("team-b", queue=False)
    assert suspended("team-b", queue=True)


def test_fair_sharing_fields_are_kept_with_a_warning_that_kq_does_not_act_on_them() -> None:
    """A setting kq accepts but ignores must say so: weights wait for fair sharing itself."""
    cq = next(manifests("s4/cluster-queues.yaml", "ClusterQueue"))
    cq["spec"]["fairSharing"] = {"weight": "2"}
    body = response(validate_kueue(review(cq)))
    assert body["allowed"] is True
    assert body["warnings"] == [FAIR_SHARING_WARNING]
    cohort = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort",
              "metadata": {"name": "c"}, "spec": {"fairSharing": {"weight": "0"}}}  # fmt: skip
    assert response(validate_kueue(review(cohort)))["warnings"] == [FAIR_SHARING_WARNING]
    parsed = parse_cluster_queue(cq)
    assert isinstance(parsed, ClusterQueue)
    assert parsed.ignored == ("spec.fairSharing",)
