"""ray.io v1 RayJob and RayCluster: a Ray cluster plus an entrypoint, as deep as admission needs."""

from __future__ import annotations

from typing import Any

from kq.crds.core import conditions, pod_template_spec
from kq.crds.schema import (
    PrinterColumn,
    Version,
    array,
    boolean,
    crd,
    date_time,
    integer,
    number,
    obj,
    preserve_unknown,
    string,
    string_map,
)

GROUP = "ray.io"
INT32_MAX = 2**31 - 1


def _ray_cluster_spec() -> dict[str, Any]:
    head = obj(
        {
            "rayStartParams": string_map(),
            "serviceType": string(),
            "enableIngress": boolean(),
            "template": pod_template_spec(description="Pod template of the head."),
        },
        required=("template",),
        preserve_unknown=True,
    )
    worker = obj(
        {
            "groupName": string(description="Worker group name; Kueue's podSet name."),
            "replicas": integer(default=0),
            "minReplicas": integer(default=0),
            "maxReplicas": integer(default=INT32_MAX),
            "numOfHosts": integer(default=1, description="Hosts per replica (multi-host)."),
            "suspend": boolean(),
            "rayStartParams": string_map(),
            "template": pod_template_spec(description="Pod template of the workers."),
        },
        required=("groupName", "minReplicas", "maxReplicas", "template"),
        preserve_unknown=True,
    )
    return obj(
        {
            "rayVersion": string(),
            "enableInTreeAutoscaling": boolean(),
            "headGroupSpec": head,
            "workerGroupSpecs": array(worker),
            "suspend": boolean(),
            "managedBy": string(),
        },
        required=("headGroupSpec",),
        preserve_unknown=True,
        description="The RayCluster created for this job.",
    )


def rayjob() -> dict[str, Any]:
    """RayJob v1."""
    spec = obj(
        {
            "entrypoint": string(description="Command run on the cluster."),
            "rayClusterSpec": _ray_cluster_spec(),
            "clusterSelector": string_map(description="Use an existing RayCluster instead."),
            "suspend": boolean(description="Kueue admits by clearing it."),
            "shutdownAfterJobFinishes": boolean(description="Must be true under Kueue."),
            "submissionMode": string(default="K8sJobMode"),
            "submitterPodTemplate": pod_template_spec(description="Pod of the submitter Job."),
            "ttlSecondsAfterFinished": integer(default=0),
            "activeDeadlineSeconds": integer(),
            "preRunningDeadlineSeconds": integer(minimum=1),
            "backoffLimit": integer(default=0),
            "runtimeEnvYAML": string(),
            "jobId": string(),
            "entrypointNumCpus": number(),
            "entrypointNumGpus": number(),
            "entrypointResources": string(),
            "metadata": string_map(),
            "managedBy": string(),
            "deletionStrategy": preserve_unknown(),
            "submitterConfig": preserve_unknown(),
        },
        preserve_unknown=True,
    )
    status = obj(
        {
            "jobId": string(),
            "rayClusterName": string(),
            "dashboardURL": string(),
            "jobStatus": string(description="PENDING, RUNNING, SUCCEEDED, FAILED or STOPPED."),
            "jobDeploymentStatus": string(
                description="Initializing, Running, Complete, Failed, Suspending, Suspended..."
            ),
            "reason": string(),
            "message": string(),
            "startTime": date_time(),
            "endTime": date_time(),
            "succeeded": integer(default=0),
            "failed": integer(default=0),
            "observedGeneration": integer(fmt="int64"),
            "rayClusterStatus": preserve_unknown(),
            "rayJobInfo": obj({"startTime": date_time(), "endTime": date_time()}),
            "jobStatusCheckFailureStartTime": date_time(),
        },
        preserve_unknown=True,
    )
    columns = (
        PrinterColumn("job status", "string", ".status.jobStatus"),
        PrinterColumn("deployment status", "string", ".status.jobDeploymentStatus"),
        PrinterColumn("ray cluster name", "string", ".status.rayClusterName"),
        PrinterColumn("start time", "string", ".status.startTime"),
        PrinterColumn("end time", "string", ".status.endTime"),
        PrinterColumn("age", "date", ".metadata.creationTimestamp"),
    )
    return crd(
        group=GROUP,
        kind="RayJob",
        plural="rayjobs",
        namespaced=True,
        versions=[Version("v1", spec, status, printer_columns=columns)],
        categories=("all",),
    )


def raycluster() -> dict[str, Any]:
    """RayCluster v1: what a RayJob runs on; the sandbox creates one per RayJob."""
    status = obj(
        {
            "state": string(description="ready, failed or suspended (deprecated upstream)."),
            "reason": string(),
            "desiredWorkerReplicas": integer(),
            "availableWorkerReplicas": integer(),
            "readyWorkerReplicas": integer(),
            "minWorkerReplicas": integer(),
            "maxWorkerReplicas": integer(),
            "head": obj({"podName": string(), "podIP": string(), "serviceIP": string()}),
            "conditions": conditions(description="HeadPodReady, RayClusterProvisioned, ..."),
            "lastUpdateTime": date_time(),
            "observedGeneration": integer(fmt="int64"),
        },
        preserve_unknown=True,
    )
    columns = (
        PrinterColumn("desired workers", "integer", ".status.desiredWorkerReplicas"),
        PrinterColumn("available workers", "integer", ".status.availableWorkerReplicas"),
        PrinterColumn("status", "string", ".status.state"),
        PrinterColumn("age", "date", ".metadata.creationTimestamp"),
    )
    return crd(
        group=GROUP,
        kind="RayCluster",
        plural="rayclusters",
        namespaced=True,
        versions=[Version("v1", _ray_cluster_spec(), status, printer_columns=columns)],
        categories=("all",),
    )


def crds() -> list[dict[str, Any]]:
    """Every ray.io CRD kq serves."""
    return [rayjob(), raycluster()]
