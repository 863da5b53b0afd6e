"""jobset.x-k8s.io v1alpha2 JobSet: groups of identical Jobs (e.g. one per TPU slice)."""

from __future__ import annotations

from typing import Any

from kq.crds.core import conditions, job_template_spec
from kq.crds.schema import (
    AGE_COLUMN,
    PrinterColumn,
    Version,
    array,
    boolean,
    crd,
    integer,
    obj,
    preserve_unknown,
    string,
)

GROUP = "jobset.x-k8s.io"


def jobset() -> dict[str, Any]:
    """JobSet v1alpha2, to the depth kq's admission and restart handling read."""
    replicated_job = obj(
        {
            "name": string(description="Name of the group; part of each child Job's name."),
            "groupName": string(default="default"),
            "replicas": integer(default=1, minimum=0, description="Number of child Jobs."),
            "template": job_template_spec(description="Template of every child Job."),
            "dependsOn": array(
                obj(
                    {"name": string(), "status": string(enum=("Ready", "Complete"))},
                    required=("name", "status"),
                ),
                map_keys=("name",),
                max_items=5,
                description="ReplicatedJobs that must reach a status before this one starts.",
            ),
        },
        required=("name", "template"),
    )
    rule = obj(
        {
            "name": string(),
            "action": string(
                enum=(
                    "FailJobSet",
                    "RestartJobSet",
                    "RestartJobSetAndIgnoreMaxRestarts",
                    "RestartJob",
                    "RestartJobAndIgnoreMaxRestarts",
                )
            ),
            "onJobFailureReasons": array(string()),
            "onJobFailureMessagePatterns": array(string()),
            "targetReplicatedJobs": array(string(), list_type="atomic"),
        },
        required=("name", "action"),
    )
    spec = obj(
        {
            "replicatedJobs": array(replicated_job, map_keys=("name",)),
            "network": obj(
                {
                    "enableDNSHostnames": boolean(),
                    "subdomain": string(),
                    "publishNotReadyAddresses": boolean(),
                }
            ),
            "successPolicy": obj(
                {
                    "operator": string(enum=("All", "Any")),
                    "targetReplicatedJobs": array(string(), list_type="atomic"),
                },
                required=("operator",),
            ),
            "failurePolicy": obj(
                {
                    "maxRestarts": integer(description="Restarts before the JobSet fails."),
                    "restartStrategy": string(
                        enum=("Recreate", "BlockingRecreate", "InPlaceRestart"),
                        default="Recreate",
                        description="BlockingRecreate deletes every child Job before recreating.",
                    ),
                    "rules": array(rule),
                }
            ),
            "startupPolicy": obj(
                {"startupPolicyOrder": string(enum=("AnyOrder", "InOrder"))},
                required=("startupPolicyOrder",),
            ),
            "suspend": boolean(description="Suspends the child Jobs; Kueue admits by clearing it."),
            "coordinator": obj(
                {
                    "replicatedJob": string(),
                    "jobIndex": integer(fmt=None),
                    "podIndex": integer(fmt=None),
                },
                required=("replicatedJob",),
            ),
            "managedBy": string(),
            "ttlSecondsAfterFinished": integer(minimum=0),
            "volumeClaimPolicies": array(
                preserve_unknown(),
                list_type="atomic",
                max_items=50,
                description="PersistentVolumeClaims created for the child Jobs.",
            ),
        }
    )
    replicated_job_status = obj(
        {
            "name": string(),
            "ready": integer(),
            "succeeded": integer(),
            "failed": integer(),
            "active": integer(),
            "suspended": integer(),
            "jobRestarts": array(integer(), list_type="atomic", max_items=1024),
            "jobRestartsCountTowardsMax": array(integer(), list_type="atomic", max_items=1024),
        },
        required=("name", "ready", "succeeded", "failed", "active", "suspended"),
    )
    status = obj(
        {
            "conditions": conditions(description="StartupPolicyCompleted, Completed, Failed..."),
            "restarts": integer(description="Times the JobSet was restarted."),
            "restartsCountTowardsMax": integer(
                description="Restarts counted against failurePolicy.maxRestarts."
            ),
            "terminalState": string(description="Completed or Failed once finished."),
            "replicatedJobsStatus": array(replicated_job_status, map_keys=("name",)),
            "currentInPlaceRestartAttempt": integer(minimum=0),
            "previousInPlaceRestartAttempt": integer(minimum=0),
        }
    )
    columns = (
        PrinterColumn("TerminalState", "string", ".status.terminalState", "Final state of JobSet"),
        PrinterColumn("Restarts", "string", ".status.restarts", "Number of restarts"),
        PrinterColumn("Completed", "string", '.status.conditions[?(@.type=="Completed")].status'),
        PrinterColumn("Suspended", "string", ".spec.suspend", "JobSet suspended"),
        PrinterColumn(
            AGE_COLUMN.name, AGE_COLUMN.type, AGE_COLUMN.json_path, "Time this JobSet was created"
        ),
    )
    return crd(
        group=GROUP,
        kind="JobSet",
        plural="jobsets",
        namespaced=True,
        versions=[Version("v1alpha2", spec, status, printer_columns=columns)],
    )


def crds() -> list[dict[str, Any]]:
    """Every jobset.x-k8s.io CRD kq serves."""
    return [jobset()]
