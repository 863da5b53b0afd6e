"""The mutating and validating webhook logic for every integration, as pure functions."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kq.api.priority import PRIORITY_CLASS_LABEL
from kq.jobframework.constants import (
    DEFAULT_LOCAL_QUEUE,
    MAX_EXEC_TIME_LABEL,
    QUEUE_NAME_KEY,
)
from kq.jobframework.interface import FieldError, GenericJob, Job, JobWithCustomValidation
from kq.jobframework.objects import deep_copy, labels
from kq.jobframework.queue_name import QueueName, is_managed, queue_name

IMMUTABLE = "field is immutable"
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1123_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@dataclass(frozen=True)
class WebhookFacts:
    """What the webhooks need to know about the cluster for one job."""

    manage_jobs_without_queue_name: bool = False
    namespace_managed: bool = True
    default_local_queue_exists: bool = False
    """Whether the job's namespace has a LocalQueue named ``default``."""
    ancestor_managed: bool = False
    """Whether a job kq manages controls this one (its Workload covers this job's pods)."""
    excluded: bool = False
    """Left alone whatever its labels say: a pod outside ``managedJobsNamespaceSelector`` or
    the ``podOptions`` selectors, as upstream's pod webhook."""


def default_on_create(
    integration: GenericJob,
    job: Job,
    *,
    manage_jobs_without_queue_name: bool = False,
    namespace_managed: bool = True,
    default_local_queue_exists: bool = False,
    ancestor_managed: bool = False,
    excluded: bool = False,
) -> dict[str, Any]:
    """The job as the mutating webhook leaves it: suspended when kq will manage it.

    Jobs of an ancestor kq manages are left alone (the ancestor's Workload covers them). A job
    naming no queue in a namespace with a LocalQueue ``default`` is put in that queue.
    """
    out = deep_copy(job)
    if ancestor_managed or excluded:
        return out
    if default_local_queue_exists and namespace_managed and not queue_name(out).name:
        metadata = out.setdefault("metadata", {})
        metadata["labels"] = {**(metadata.get("labels") or {}), QUEUE_NAME_KEY: DEFAULT_LOCAL_QUEUE}
    managed = is_managed(
        out,
        manage_jobs_without_queue_name=manage_jobs_without_queue_name,
        namespace_managed=namespace_managed,
    )
    if managed and not integration.is_suspended(out):
        return integration.suspend(out)
    return out


def validate_on_create(
    integration: GenericJob, job: Job, *, manage_jobs_without_queue_name: bool = False
) -> list[FieldError]:
    queue = queue_name(job)
    errors = []
    if queue.name and not _is_dns1123_subdomain(queue.name):
        errors.append(
            FieldError(_queue_path(queue), "Invalid", _DNS1123_SUBDOMAIN_MESSAGE, queue.name)
        )
    errors += _validate_max_exec_time(job)
    if isinstance(integration, JobWithCustomValidation) and (
        queue.name or manage_jobs_without_queue_name
    ):
        errors += integration.validate_on_create(job)
    return errors


def validate_on_update(
    integration: GenericJob,
    old: Job,
    new: Job,
    *,
    manage_jobs_without_queue_name: bool = False,
    default_local_queue_exists: bool = False,
) -> list[FieldError]:
    """Queue, max-exec-time and priority-class label rules, then the integration's own."""
    old_queue, new_queue = queue_name(old), queue_name(new)
    new_suspended = integration.is_suspended(new)
    errors = []
    if not new_suspended and new_queue.name != old_queue.name:
        errors.append(FieldError(_queue_path(new_queue), "Invalid", IMMUTABLE, new_queue.name))
    if not new_queue.name and old_queue.name and default_local_queue_exists:
        errors.append(
            FieldError(
                _queue_path(new_queue),
                "Invalid",
                "queue-name must not be empty in namespace with default queue",
                "",
            )
        )
    if not (new_suspended and integration.is_suspended(old)):
        old_max, new_max = (
            labels(old).get(MAX_EXEC_TIME_LABEL),
            labels(new).get(MAX_EXEC_TIME_LABEL),
        )
        if old_max != new_max:
            errors.append(
                FieldError(_label_path(MAX_EXEC_TIME_LABEL), "Invalid", IMMUTABLE, new_max or "")
            )
    errors += _validate_priority_class_update(new_suspended, old, new)
    if isinstance(integration, JobWithCustomValidation) and (
        new_queue.name or manage_jobs_without_queue_name
    ):
        errors += integration.validate_on_update(old, new)
    return errors


def format_errors(errors: Sequence[FieldError]) -> str:
    """One message, as Kubernetes aggregates field errors: ``a`` or ``[a, b]``."""
    if len(errors) == 1:
        return str(errors[0])
    return "[" + ", ".join(str(e) for e in errors) + "]"


def _validate_priority_class_update(suspended: bool, old: Job, new: Job) -> list[FieldError]:
    old_class = labels(old).get(PRIORITY_CLASS_LABEL, "")
    new_class = labels(new).get(PRIORITY_CLASS_LABEL, "")
    path = _label_path(PRIORITY_CLASS_LABEL)
    if not suspended and not old_class and new_class:
        return [
            FieldError(
                path,
                "Invalid",
                "WorkloadPriorityClass cannot be added to a non-suspended workload",
                new_class,
            )
        ]
    if old_class and not new_class:
        return [
            FieldError(
                path, "Invalid", "WorkloadPriorityClass cannot be removed from a workload", ""
            )
        ]
    return []


def _validate_max_exec_time(job: Job) -> list[FieldError]:
    raw = labels(job).get(MAX_EXEC_TIME_LABEL)
    if raw is None:
        return []
    path = _label_path(MAX_EXEC_TIME_LABEL)
    try:
        value = int(raw)
    except ValueError:
        return [FieldError(path, "Invalid", f'strconv.Atoi: parsing "{raw}": invalid syntax', raw)]
    if value <= 0:
        return [FieldError(path, "Invalid", "should be greater than 0", value)]
    return []


def _is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= 253 and _DNS1123_SUBDOMAIN.match(value) is not None


def _label_path(label: str) -> str:
    return f"metadata.labels[{label}]"


def _queue_path(queue: QueueName) -> str:
    where = "annotations" if queue.from_annotation else "labels"
    return f"metadata.{where}[{QUEUE_NAME_KEY}]"
