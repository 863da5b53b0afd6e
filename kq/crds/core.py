"""Schemas of core Kubernetes types embedded in the custom resources (conditions, pod templates).

Pod and Job templates declare only the fields kq reads and keep everything else unpruned, so
manifests written for the upstream controllers round-trip unchanged.
"""

from __future__ import annotations

from kq.crds.schema import (
    Schema,
    array,
    boolean,
    date_time,
    integer,
    map_of,
    obj,
    quantity,
    string,
    string_map,
)

CONDITION_STATUS = ("True", "False", "Unknown")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def conditions(*, description: str) -> Schema:
    """A list-map of metav1.Condition keyed by type."""
    condition = obj(
        {
            "type": string(
                max_length=316,
                pattern=(
                    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                ),
            ),
            "status": string(enum=CONDITION_STATUS),
            "reason": string(
                min_length=1, max_length=1024, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
            ),
            "message": string(max_length=32768),
            "lastTransitionTime": date_time(),
            "observedGeneration": integer(fmt="int64", minimum=0),
        },
        required=("type", "status", "reason", "message", "lastTransitionTime"),
    )
    return array(condition, map_keys=("type",), description=description)


def job_conditions(*, description: str) -> Schema:
    """A list-map of job-style conditions (only type and status required, lastUpdateTime too)."""
    condition = obj(
        {
            "type": string(),
            "status": string(enum=CONDITION_STATUS),
            "reason": string(),
            "message": string(),
            "lastUpdateTime": date_time(),
            "lastTransitionTime": date_time(),
        },
        required=("type", "status"),
    )
    return array(condition, map_keys=("type",), description=description)


def label_selector(*, description: str) -> Schema:
    """A metav1.LabelSelector; an empty selector matches everything."""
    requirement = obj(
        {
            "key": string(),
            "operator": string(description="In, NotIn, Exists or DoesNotExist."),
            "values": array(string(), list_type="atomic"),
        },
        required=("key", "operator"),
    )
    return {
        **obj(
            {
                "matchExpressions": array(requirement, list_type="atomic"),
                "matchLabels": string_map(),
            },
            description=description,
        ),
        "x-kubernetes-map-type": "atomic",
    }


def toleration() -> Schema:
    """A core/v1 Toleration."""
    return obj(
        {
            "key": string(),
            "operator": string(description="Exists or Equal (the default)."),
            "value": string(),
            "effect": string(description="Empty (every effect) or a taint effect."),
            "tolerationSeconds": integer(fmt="int64"),
        }
    )


def taint() -> Schema:
    """A core/v1 Taint."""
    return obj(
        {
            "key": string(),
            "value": string(),
            "effect": string(enum=TAINT_EFFECTS),
            "timeAdded": date_time(),
        },
        required=("key", "effect"),
    )


def resource_list(*, description: str | None = None) -> Schema:
    """A map of resource name to quantity."""
    return map_of(quantity(), description=description)


def _object_meta() -> Schema:
    return obj(
        {
            "name": string(),
            "namespace": string(),
            "labels": string_map(),
            "annotations": string_map(),
            "finalizers": array(string()),
        },
        preserve_unknown=True,
    )


def pod_template_spec(*, description: str) -> Schema:
    """A core/v1 PodTemplateSpec: the scheduling fields kq reads typed, the rest kept verbatim."""
    container = obj(
        {
            "name": string(),
            "image": string(),
            "resources": obj(
                {"limits": resource_list(), "requests": resource_list()},
                preserve_unknown=True,
            ),
        },
        preserve_unknown=True,
    )
    spec = obj(
        {
            "containers": array(container),
            "initContainers": array(container),
            "nodeSelector": string_map(),
            "tolerations": array(toleration(), list_type="atomic"),
            "priorityClassName": string(),
            "priority": integer(),
            "restartPolicy": string(),
            "schedulingGates": array(obj({"name": string()}, required=("name",))),
        },
        preserve_unknown=True,
    )
    return obj({"metadata": _object_meta(), "spec": spec}, description=description)


def job_template_spec(*, description: str) -> Schema:
    """A batch/v1 JobTemplateSpec: the counts kq reads typed, the rest kept verbatim."""
    spec = obj(
        {
            "parallelism": integer(),
            "completions": integer(),
            "backoffLimit": integer(),
            "completionMode": string(),
            "suspend": boolean(),
            "template": pod_template_spec(description="Pods the Job creates."),
        },
        preserve_unknown=True,
    )
    return obj({"metadata": _object_meta(), "spec": spec}, description=description)
