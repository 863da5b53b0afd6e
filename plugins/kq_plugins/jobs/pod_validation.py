"""The pod webhook's field rules (upstream's ``pod_webhook.go``): the managed label, the group
name and size, and a group's retry policy."""

from __future__ import annotations

import re

from kq.jobframework import FieldError, Job
from kq.jobframework.objects import annotations_of, labels
from kq_plugins.jobs import pod_group as group

MANAGED_LABEL = "kueue.x-k8s.io/managed"
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_GROUP_NAME_PATH = f"metadata.labels[{group.GROUP_NAME_LABEL}]"
_TOTAL_COUNT_PATH = f"metadata.annotations[{group.GROUP_TOTAL_COUNT_ANNOTATION}]"
_RETRIABLE_PATH = f"metadata.annotations[{group.RETRIABLE_IN_GROUP_ANNOTATION}]"
_BOTH = (
    f"both the '{group.GROUP_TOTAL_COUNT_ANNOTATION}' annotation and the "
    f"'{group.GROUP_NAME_LABEL}' label should be set"
)


def validate_create(pod: Job) -> list[FieldError]:
    return _common(pod)


def validate_update(old: Job, new: Job) -> list[FieldError]:
    errors = _common(new)
    old_group, new_group = group.group_name(old), group.group_name(new)
    if new_group and _unretriable(old) and not _unretriable(new):
        errors.append(
            FieldError(
                _RETRIABLE_PATH,
                "Forbidden",
                "unretriable pod group can't be converted to retriable",
            )
        )
    if old_group and new_group != old_group:
        errors.append(FieldError(_GROUP_NAME_PATH, "Invalid", "field is immutable", new_group))
    return errors


def _common(pod: Job) -> list[FieldError]:
    errors = []
    managed = labels(pod).get(MANAGED_LABEL)
    if managed is not None and managed != "true":
        errors.append(
            FieldError(
                f"metadata.labels[{MANAGED_LABEL}]",
                "Forbidden",
                "managed label value can only be 'true'",
            )
        )
    return errors + _group_metadata(pod)


def _group_metadata(pod: Job) -> list[FieldError]:
    name = group.group_name(pod)
    count = annotations_of(pod).get(group.GROUP_TOTAL_COUNT_ANNOTATION)
    if not name:
        return [FieldError(_GROUP_NAME_PATH, "Required", _BOTH)] if count is not None else []
    errors = []
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        errors.append(
            FieldError(
                _GROUP_NAME_PATH,
                "Invalid",
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
                name,
            )
        )
    if count is None:
        return [*errors, FieldError(_TOTAL_COUNT_PATH, "Required", _BOTH)]
    try:
        group.total_count(pod)
    except ValueError as error:
        errors.append(FieldError(_TOTAL_COUNT_PATH, "Invalid", str(error), count))
    return errors


def _unretriable(pod: Job) -> bool:
    return annotations_of(pod).get(group.RETRIABLE_IN_GROUP_ANNOTATION) == "false"
