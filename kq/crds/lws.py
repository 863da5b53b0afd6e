"""leaderworkerset.x-k8s.io v1 LeaderWorkerSet: groups of one leader pod and size-1 workers.

Written for kq (upstream's generated CRD is not copied): the fields the LWS operator and Kueue's
integration read are typed with upstream's defaults and enums, pod templates keep the rest
verbatim, and the scale subresource lets ``kubectl scale lws`` and HPAs set ``spec.replicas``.
"""

from __future__ import annotations

from typing import Any

from kq.crds.core import conditions, pod_template_spec
from kq.crds.schema import (
    AGE_COLUMN,
    PrinterColumn,
    Version,
    array,
    crd,
    integer,
    obj,
    preserve_unknown,
    quantity,
    string,
)

GROUP = "leaderworkerset.x-k8s.io"


def _int_or_percent(default: int, description: str) -> dict[str, Any]:
    """A count or a percentage such as ``"25%"`` (intstr.IntOrString)."""
    schema = quantity(default=default, description=f"{description} A count or a percentage.")
    del schema["pattern"]  # not a resource quantity: "25%" is valid
    return schema


def _template() -> dict[str, Any]:
    return obj(
        {
            "leaderTemplate": pod_template_spec(
                description="Pod template of the leaders; the worker template when unset."
            ),
            "workerTemplate": pod_template_spec(description="Pod template of the workers."),
            "size": integer(default=1, minimum=1, description="Pods per group, leader included."),
            "restartPolicy": string(
                enum=("Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"),
                default="RecreateGroupOnPodRestart",
                description="Whether a failed or restarted pod recreates its whole group.",
            ),
            "subGroupPolicy": obj(
                {
                    "subGroupPolicyType": string(
                        enum=("LeaderWorker", "LeaderExcluded"), default="LeaderWorker"
                    ),
                    "subGroupSize": integer(minimum=1),
                }
            ),
            "volumeClaimTemplates": array(preserve_unknown(), list_type="atomic"),
            "persistentVolumeClaimRetentionPolicy": obj(
                {"whenDeleted": string(), "whenScaled": string()}
            ),
        },
        required=("workerTemplate",),
    )


def _spec() -> dict[str, Any]:
    rolling = obj(
        {
            "partition": integer(default=0, minimum=0),
            "maxUnavailable": _int_or_percent(1, "Groups down at once during an update."),
            "maxSurge": _int_or_percent(0, "Extra groups during an update."),
        }
    )
    return obj(
        {
            "replicas": integer(default=1, minimum=0, description="Number of groups."),
            "leaderWorkerTemplate": _template(),
            "rolloutStrategy": obj(
                {
                    "type": string(enum=("RollingUpdate",), default="RollingUpdate"),
                    "rollingUpdateConfiguration": rolling,
                },
                default={"type": "RollingUpdate"},
            ),
            "startupPolicy": string(
                enum=("LeaderCreated", "LeaderReady"),
                default="LeaderCreated",
                description="Create the workers once the leader pod exists, or once it is ready.",
            ),
            "networkConfig": obj(
                {"subdomainPolicy": string(enum=("Shared", "UniquePerReplica"))},
                required=("subdomainPolicy",),
            ),
        },
        required=("leaderWorkerTemplate",),
    )


def leaderworkerset() -> dict[str, Any]:
    """LeaderWorkerSet v1, to the depth the upstream samples and Kueue's integration use."""
    status = obj(
        {
            "conditions": conditions(description="Available, Progressing, UpdateInProgress."),
            "readyReplicas": integer(description="Groups whose every pod is ready."),
            "updatedReplicas": integer(description="Groups on the current template revision."),
            "replicas": integer(description="Groups that exist (leader pods)."),
            "hpaPodSelector": string(description="Label selector of the leader pods."),
            "observedGeneration": integer(fmt="int64"),
        }
    )
    columns = (
        PrinterColumn("Ready", "integer", ".status.readyReplicas", "Number of ready replicas"),
        PrinterColumn("Desired", "integer", ".spec.replicas", "Number of desired replicas"),
        PrinterColumn(
            "Up-to-date", "integer", ".status.updatedReplicas", "Number of up-to-date replicas"
        ),
        AGE_COLUMN,
    )
    out = crd(
        group=GROUP,
        kind="LeaderWorkerSet",
        plural="leaderworkersets",
        namespaced=True,
        versions=[Version("v1", _spec(), status, printer_columns=columns)],
        short_names=("lws",),
    )
    out["spec"]["versions"][0]["subresources"]["scale"] = {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.hpaPodSelector",
    }
    return out


def crds() -> list[dict[str, Any]]:
    """Every leaderworkerset.x-k8s.io CRD kq serves."""
    return [leaderworkerset()]
