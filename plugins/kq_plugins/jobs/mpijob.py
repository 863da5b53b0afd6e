"""MPIJob (kubeflow.org/v2beta1): PodSets ``launcher`` then ``worker``, those present.

Counts are the replicas (default 1); ``runLauncherAsWorker`` changes no count upstream. The
suspend field is ``spec.runPolicy.suspend``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import Finished, GroupVersionKind, Job, PodSet, PodSetInfo
from kq.jobframework.objects import condition_is_true, deep_copy, find_condition
from kq.jobframework.podset import check_info_count
from kq.jobframework.templates import Path, get_in, merge_templates, restore_templates, set_in

REPLICA_TYPES = ("Launcher", "Worker")
SUSPEND: Path = ("spec", "runPolicy", "suspend")


class MPIJob:
    NAME: ClassVar[str] = "kubeflow.org/mpijob"
    GVK: ClassVar[GroupVersionKind] = GroupVersionKind("kubeflow.org", "v2beta1", "MPIJob")

    def is_suspended(self, job: Job) -> bool:
        return bool(get_in(job, SUSPEND))

    def suspend(self, job: Job) -> dict[str, Any]:
        return set_in(job, SUSPEND, True)

    def pod_sets(self, job: Job) -> list[PodSet]:
        specs = _replica_specs(job)
        return [
            PodSet(t.lower(), _replicas(specs[t]), deep_copy(specs[t].get("template") or {}))
            for t in _ordered_types(job)
        ]

    def run_with_pod_set_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        check_info_count(infos, len(_ordered_types(job)))
        return merge_templates(set_in(job, SUSPEND, False), _paths(job), infos)

    def restore_pod_sets_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        if len(infos) != len(_ordered_types(job)):
            return deep_copy(job)
        return restore_templates(job, _paths(job), infos)

    def finished(self, job: Job) -> Finished | None:
        for type_, success in (("Succeeded", True), ("Failed", False)):
            if condition_is_true(job, type_):
                return Finished(success, str((find_condition(job, type_) or {}).get("message", "")))
        return None

    def is_active(self, job: Job) -> bool:
        statuses = (job.get("status") or {}).get("replicaStatuses") or {}
        return any(int((s or {}).get("active") or 0) != 0 for s in statuses.values())

    def pods_ready(self, job: Job) -> bool:
        return condition_is_true(job, "Running")

    def priority_class(self, job: Job) -> str:
        """``schedulingPolicy.priorityClass``, then the launcher's, then the worker's."""
        policy = get_in(job, ("spec", "runPolicy", "schedulingPolicy", "priorityClass"))
        if policy:
            return str(policy)
        specs = _replica_specs(job)
        for replica_type in REPLICA_TYPES:
            name = get_in(specs.get(replica_type), ("template", "spec", "priorityClassName"))
            if name:
                return str(name)
        return ""


def _replica_specs(job: Job) -> dict[str, Job]:
    return dict((job.get("spec") or {}).get("mpiReplicaSpecs") or {})


def _replicas(spec: Job) -> int:
    replicas = spec.get("replicas")
    return int(replicas) if replicas is not None else 1


def _ordered_types(job: Job) -> list[str]:
    specs = _replica_specs(job)
    return [t for t in REPLICA_TYPES if specs.get(t) is not None]


def _paths(job: Job) -> list[Path]:
    return [("spec", "mpiReplicaSpecs", t, "template") for t in _ordered_types(job)]


@hookimpl
def kq_register_job_integrations(register: Register) -> None:
    register(MPIJob)
