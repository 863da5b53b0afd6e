"""The Workload object built for a job, and the status predicates the reconciler reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kq.jobframework.constants import (
    EXCLUSIVE_TOPOLOGY_ANNOTATION,
    JOB_UID_LABEL,
    MAX_EXEC_TIME_LABEL,
    PROVREQ_ANNOTATION_PREFIX,
    RESOURCE_IN_USE_FINALIZER,
)
from kq.jobframework.interface import GenericJob, Job
from kq.jobframework.naming import workload_name
from kq.jobframework.objects import (
    Obj,
    annotations_of,
    condition_is_true,
    find_condition,
    labels,
    name,
    namespace,
    uid,
)
from kq.jobframework.podset import PodSet
from kq.jobframework.priority import Priority

WORKLOAD_API_VERSION = "kueue.x-k8s.io/v1beta1"
_LABEL_VALUE_MAX = 63


def max_execution_time_seconds(job: Job) -> int | None:
    """The positive integer in the label, or ``None`` (an invalid value is ignored, as upstream)."""
    raw = labels(job).get(MAX_EXEC_TIME_LABEL)
    try:
        value = int(raw) if raw is not None else 0
    except ValueError:
        return None
    return value if 0 < value < 2**31 else None


def owner_reference(integration: GenericJob, job: Job) -> dict[str, Any]:
    return {
        "apiVersion": integration.GVK.api_version,
        "kind": integration.GVK.kind,
        "name": name(job),
        "uid": uid(job),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def workload_spec(
    pod_sets: Sequence[PodSet], queue: str, priority: Priority, job: Job
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "podSets": [ps.to_dict() for ps in pod_sets],
        "priority": priority.value,
    }
    # A job managed without a queue name (manageJobsWithoutQueueName) gets a Workload without
    # one, as upstream's omitempty field: the API refuses an empty name.
    if queue:
        spec = {"queueName": queue, **spec}
    if priority.class_name:
        spec["priorityClassName"] = priority.class_name
        spec["priorityClassSource"] = priority.source
    max_exec = max_execution_time_seconds(job)
    if max_exec is not None:
        spec["maximumExecutionTimeSeconds"] = max_exec
    return spec


def build_workload(
    integration: GenericJob,
    job: Job,
    pod_sets: Sequence[PodSet],
    queue: str,
    priority: Priority,
) -> dict[str, Any]:
    """The Workload to create for ``job``; owned by it, so deleting the job collects it."""
    wl_labels = {}
    # A UID that is not a valid label value is left out, as upstream does.
    if 0 < len(uid(job)) <= _LABEL_VALUE_MAX:
        wl_labels[JOB_UID_LABEL] = uid(job)
    metadata: dict[str, Any] = {
        "name": workload_name(name(job), uid(job), integration.GVK),
        "namespace": namespace(job),
        "labels": wl_labels,
        "finalizers": [RESOURCE_IN_USE_FINALIZER],
        "ownerReferences": [owner_reference(integration, job)],
    }
    job_annotations = annotations_of(job)
    provreq = {k: v for k, v in job_annotations.items() if k.startswith(PROVREQ_ANNOTATION_PREFIX)}
    exclusive = [
        ps.topology_request["podSetSliceRequiredTopology"]
        for ps in pod_sets
        if ps.exclusive and ps.topology_request
    ]
    if exclusive:
        provreq[EXCLUSIVE_TOPOLOGY_ANNOTATION] = str(exclusive[0])
    if provreq:
        metadata["annotations"] = provreq
    return {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": "Workload",
        "metadata": metadata,
        "spec": workload_spec(pod_sets, queue, priority, job),
    }


def has_quota_reservation(workload: Obj) -> bool:
    return condition_is_true(workload, "QuotaReserved")


def is_admitted(workload: Obj) -> bool:
    return condition_is_true(workload, "Admitted")


def is_finished(workload: Obj) -> bool:
    return condition_is_true(workload, "Finished")


def eviction(workload: Obj) -> Obj | None:
    """The ``Evicted`` condition while it is true."""
    condition = find_condition(workload, "Evicted")
    return condition if condition is not None and condition.get("status") == "True" else None
