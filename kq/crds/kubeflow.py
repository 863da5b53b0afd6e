"""kubeflow.org v2beta1 MPIJob: a launcher plus workers, admitted all-or-nothing."""

from __future__ import annotations

from typing import Any

from kq.crds.core import job_conditions, label_selector, pod_template_spec, resource_list
from kq.crds.schema import Version, boolean, crd, date_time, integer, map_of, obj, string

GROUP = "kubeflow.org"


def mpijob() -> dict[str, Any]:
    """MPIJob v2beta1."""
    replica_spec = obj(
        {
            "replicas": integer(description="Pods of this role (Kueue defaults it to 1)."),
            "restartPolicy": string(description="Always, OnFailure, Never or ExitCode."),
            "template": pod_template_spec(description="Pod template of this role."),
        }
    )
    run_policy = obj(
        {
            "suspend": boolean(default=False, description="Kueue admits by clearing it."),
            "cleanPodPolicy": string(description="None, Running or All."),
            "backoffLimit": integer(),
            "activeDeadlineSeconds": integer(fmt="int64"),
            "ttlSecondsAfterFinished": integer(),
            "managedBy": string(),
            "schedulingPolicy": obj(
                {
                    "minAvailable": integer(),
                    "queue": string(),
                    "minResources": resource_list(),
                    "priorityClass": string(),
                    "scheduleTimeoutSeconds": integer(),
                }
            ),
        }
    )
    spec = obj(
        {
            "slotsPerWorker": integer(default=1),
            "runLauncherAsWorker": boolean(default=False),
            "runPolicy": run_policy,
            "mpiReplicaSpecs": map_of(
                replica_spec, description="Replica specs keyed by role: Launcher, Worker."
            ),
            "sshAuthMountPath": string(default="/root/.ssh"),
            "launcherCreationPolicy": string(
                default="AtStartup", description="AtStartup or WaitForWorkersReady."
            ),
            "mpiImplementation": string(enum=("OpenMPI", "Intel", "MPICH"), default="OpenMPI"),
        },
        required=("mpiReplicaSpecs",),
    )
    replica_status = obj(
        {
            "active": integer(),
            "succeeded": integer(),
            "failed": integer(),
            "labelSelector": label_selector(description="Selector of this role's pods."),
            "selector": string(),
        }
    )
    status = obj(
        {
            "conditions": job_conditions(
                description="Created, Running, Restarting, Succeeded, Failed, Suspended."
            ),
            "replicaStatuses": map_of(replica_status, description="Pod counts per role."),
            "startTime": date_time(),
            "completionTime": date_time(),
            "lastReconcileTime": date_time(),
        }
    )
    return crd(
        group=GROUP,
        kind="MPIJob",
        plural="mpijobs",
        namespaced=True,
        versions=[Version("v2beta1", spec, status)],
    )


def crds() -> list[dict[str, Any]]:
    """Every kubeflow.org CRD kq serves."""
    return [mpijob()]
