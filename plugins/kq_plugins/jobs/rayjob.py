"""RayJob (ray.io/v1): PodSets ``head`` (1), one per worker group, then ``submitter`` (1).

A worker group counts ``replicas`` (1 when unset) times ``numOfHosts`` when above 1; min and
max replicas do not count. The submitter PodSet exists in K8sJobMode only; without a
``submitterPodTemplate`` it is KubeRay's default submitter, which run_with_pod_set_info then
writes into the RayJob. RayJobs on an existing cluster (``clusterSelector``) are skipped.
With GCS fault tolerance on, the head's Ray container requests at least what KubeRay's Redis
cleanup Job does, as Kueue accounts for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import (
    FieldError,
    Finished,
    GroupVersionKind,
    Job,
    PodSet,
    PodSetInfo,
    QuantityError,
    parse_quantity,
)
from kq.jobframework.constants import MAX_POD_SETS
from kq.jobframework.objects import deep_copy
from kq.jobframework.podset import check_info_count, merge_into_template
from kq.jobframework.templates import Path, get_in, merge_templates, restore_templates, set_in

K8S_JOB_MODE = "K8sJobMode"
SIDECAR_MODE = "SidecarMode"
SUBMITTER_CONTAINER = "ray-job-submitter"
SUBMITTER: Path = ("spec", "submitterPodTemplate")
# KubeRay's defaults for the submitter and the autoscaler sidecar, which take quota too.
SUBMITTER_RESOURCES = {
    "limits": {"cpu": "1", "memory": "1Gi"},
    "requests": {"cpu": "500m", "memory": "200Mi"},
}
AUTOSCALER_RESOURCES = {
    "limits": {"cpu": "500m", "memory": "512Mi"},
    "requests": {"cpu": "500m", "memory": "512Mi"},
}
# What KubeRay's Redis cleanup Job requests when GCS fault tolerance is on.
FT_ANNOTATION = "ray.io/ft-enabled"
REDIS_CLEANUP_REQUESTS = {"cpu": "200m", "memory": "256Mi"}


class RayJob:
    NAME: ClassVar[str] = "ray.io/rayjob"
    GVK: ClassVar[GroupVersionKind] = GroupVersionKind("ray.io", "v1", "RayJob")

    def is_suspended(self, job: Job) -> bool:
        return bool((job.get("spec") or {}).get("suspend"))

    def suspend(self, job: Job) -> dict[str, Any]:
        return set_in(job, ("spec", "suspend"), True)

    def skip(self, job: Job) -> bool:
        return bool((job.get("spec") or {}).get("clusterSelector"))

    def pod_sets(self, job: Job) -> list[PodSet]:
        cluster = _cluster(job)
        head = deep_copy(get_in(cluster, ("headGroupSpec", "template")) or {})
        if _gcs_fault_tolerance(job):
            _request_at_least(head, REDIS_CLEANUP_REQUESTS)
        extra = []
        if cluster.get("enableInTreeAutoscaling"):
            resources = get_in(cluster, ("autoscalerOptions", "resources")) or AUTOSCALER_RESOURCES
            extra.append({"name": "autoscaler", "resources": deep_copy(resources)})
        if _mode(job) == SIDECAR_MODE:
            extra.append({"name": SUBMITTER_CONTAINER, "resources": deep_copy(SUBMITTER_RESOURCES)})
        if extra:
            spec = head.setdefault("spec", {})
            spec["containers"] = [*(spec.get("containers") or ()), *extra]
        pod_sets = [PodSet("head", 1, head)]
        pod_sets += [
            PodSet(
                str(group.get("groupName", "")).lower(),
                _workers(group),
                deep_copy(group.get("template") or {}),
            )
            for group in _groups(job)
        ]
        if _mode(job) == K8S_JOB_MODE:
            pod_sets.append(PodSet("submitter", 1, _submitter_template(job)))
        return pod_sets

    def run_with_pod_set_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        check_info_count(infos, _expected_count(job))
        out = set_in(job, ("spec", "suspend"), False)
        out = merge_templates(out, _cluster_paths(job), infos[: len(_cluster_paths(job))])
        if _mode(job) == K8S_JOB_MODE:
            out = set_in(out, SUBMITTER, merge_into_template(_submitter_template(job), infos[-1]))
        return out

    def restore_pod_sets_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        if len(infos) != _expected_count(job):
            return deep_copy(job)
        paths = _cluster_paths(job)
        if _mode(job) == K8S_JOB_MODE and get_in(job, SUBMITTER) is not None:
            paths.append(SUBMITTER)
        return restore_templates(job, paths, infos[: len(paths)])

    def finished(self, job: Job) -> Finished | None:
        status = job.get("status") or {}
        if status.get("jobDeploymentStatus") not in ("Complete", "Failed"):
            return None
        return Finished(status.get("jobStatus") == "SUCCEEDED", str(status.get("message", "")))

    def is_active(self, job: Job) -> bool:
        return (job.get("status") or {}).get("jobDeploymentStatus") not in (None, "", "Suspended")

    def pods_ready(self, job: Job) -> bool:
        return bool(get_in(job, ("status", "rayClusterStatus", "state")) == "ready")

    def validate_on_create(self, job: Job) -> list[FieldError]:
        """Kueue's RayJob webhook rules for a managed RayJob."""
        spec = job.get("spec") or {}
        selector, cluster = spec.get("clusterSelector"), spec.get("rayClusterSpec")
        if selector and cluster is not None:
            return [
                FieldError(
                    "spec.clusterSelector",
                    "Invalid",
                    "a kueue managed job should not use an existing cluster",
                    selector,
                )
            ]
        if selector:
            return []
        if cluster is None:
            return [
                FieldError(
                    "spec.rayClusterSpec",
                    "Required",
                    "rayClusterSpec is required for Kueue-managed jobs "
                    "that don't use clusterSelector",
                )
            ]
        errors = []
        if not spec.get("shutdownAfterJobFinishes"):
            errors.append(
                FieldError(
                    "spec.shutdownAfterJobFinishes",
                    "Invalid",
                    "a kueue managed job should delete the cluster after finishing",
                    bool(spec.get("shutdownAfterJobFinishes")),
                )
            )
        if cluster.get("enableInTreeAutoscaling"):
            errors.append(
                FieldError(
                    "spec.rayClusterSpec.enableInTreeAutoscaling",
                    "Invalid",
                    "a kueue managed job should only use autoscaling "
                    "when workload slicing is enabled",
                    True,
                )
            )
        if (count := len(_groups(job)) + 1) > MAX_POD_SETS:
            errors.append(
                FieldError(
                    "spec.rayClusterSpec.workerGroupSpecs",
                    "Too many",
                    f"must have at most {MAX_POD_SETS} items",
                    count,
                )
            )
        for index, group in enumerate(_groups(job)):
            if group.get("groupName") == "head":
                errors.append(
                    FieldError(
                        f"spec.rayClusterSpec.workerGroupSpecs[{index}].groupName",
                        "Forbidden",
                        '"head" is reserved for the head group',
                    )
                )
        return errors

    def validate_on_update(self, old: Job, new: Job) -> list[FieldError]:
        return self.validate_on_create(new)


def _cluster(job: Job) -> Job:
    return (job.get("spec") or {}).get("rayClusterSpec") or {}


def _gcs_fault_tolerance(job: Job) -> bool:
    """KubeRay's IsGCSFaultToleranceEnabled, on the RayJob's annotations as Kueue calls it."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    enabled = str(annotations.get(FT_ANNOTATION, "")).lower() == "true"
    return enabled or _cluster(job).get("gcsFaultToleranceOptions") is not None


def _request_at_least(template: dict[str, Any], minimum: dict[str, str]) -> None:
    """Raise the first (Ray) container's requests to ``minimum`` where they are lower."""
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers:
        return
    resources = containers[0].get("resources") or {}
    requests = dict(resources.get("requests") or {})
    for name, value in minimum.items():
        try:
            lower = name not in requests or parse_quantity(requests[name]) < parse_quantity(value)
        except QuantityError:
            continue  # the API server rejects such a pod; leave it as written
        if lower:
            requests[name] = value
    containers[0]["resources"] = {**resources, "requests": requests}


def _groups(job: Job) -> list[Job]:
    return list(_cluster(job).get("workerGroupSpecs") or ())


def _mode(job: Job) -> str:
    # KubeRay treats an unset mode as K8sJobMode; the CRD defaults it so.
    return str((job.get("spec") or {}).get("submissionMode") or K8S_JOB_MODE)


def _workers(group: Job) -> int:
    replicas = group.get("replicas")
    count = int(replicas) if replicas is not None else 1
    hosts = int(group.get("numOfHosts") or 1)
    return count * hosts if hosts > 1 else count


def _expected_count(job: Job) -> int:
    return len(_groups(job)) + 1 + (1 if _mode(job) == K8S_JOB_MODE else 0)


def _cluster_paths(job: Job) -> list[Path]:
    head: Path = ("spec", "rayClusterSpec", "headGroupSpec", "template")
    return [head] + [
        ("spec", "rayClusterSpec", "workerGroupSpecs", i, "template")
        for i in range(len(_groups(job)))
    ]


def _submitter_template(job: Job) -> dict[str, Any]:
    template = get_in(job, SUBMITTER)
    if template is not None:
        return deep_copy(template)
    image = get_in(_cluster(job), ("headGroupSpec", "template", "spec", "containers", 0, "image"))
    container = {
        "name": SUBMITTER_CONTAINER,
        "image": image,
        "resources": deep_copy(SUBMITTER_RESOURCES),
    }
    return {"spec": {"containers": [container], "restartPolicy": "Never"}}


@hookimpl
def kq_register_job_integrations(register: Register) -> None:
    register(RayJob)
