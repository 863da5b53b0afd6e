"""JobSet (jobset.x-k8s.io/v1alpha2): one PodSet per replicatedJob, in spec order.

A PodSet counts ``replicas * min(parallelism, completions)`` pods. Admission is merged into each
replicatedJob's pod template; JobSet copies it into Jobs it created while suspended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import EXCLUSIVE_TOPOLOGY_ANNOTATION as EXCLUSIVE_TOPOLOGY
from kq.jobframework import Finished, GroupVersionKind, Job, PodSet, PodSetInfo, ReclaimablePod
from kq.jobframework.objects import condition_is_true, deep_copy, find_condition
from kq.jobframework.podset import check_info_count
from kq.jobframework.templates import Path, merge_templates, restore_templates, set_in

JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"


class JobSet:
    NAME: ClassVar[str] = "jobset.x-k8s.io/jobset"
    GVK: ClassVar[GroupVersionKind] = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")

    def is_suspended(self, job: Job) -> bool:
        return bool((job.get("spec") or {}).get("suspend"))

    def suspend(self, job: Job) -> dict[str, Any]:
        return set_in(job, ("spec", "suspend"), True)

    def pod_sets(self, job: Job) -> list[PodSet]:
        return [_pod_set(job, rjob) for rjob in _replicated_jobs(job)]

    def run_with_pod_set_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        check_info_count(infos, len(_replicated_jobs(job)))
        return merge_templates(set_in(job, ("spec", "suspend"), False), _paths(job), infos)

    def restore_pod_sets_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        # Infos for another shape of the JobSet are not ours to apply; leave it unchanged.
        if len(infos) != len(_replicated_jobs(job)):
            return deep_copy(job)
        return restore_templates(job, _paths(job), infos)

    def finished(self, job: Job) -> Finished | None:
        for type_, success in (("Completed", True), ("Failed", False)):
            if condition_is_true(job, type_):
                return Finished(success, str((find_condition(job, type_) or {}).get("message", "")))
        return None

    def is_active(self, job: Job) -> bool:
        return any(int(s.get("active") or 0) > 0 for s in _statuses(job))

    def pods_ready(self, job: Job) -> bool:
        """Compares child Job counts, not pods, as upstream does."""
        replicas = sum(_replicas(rjob) for rjob in _replicated_jobs(job))
        ready = sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0) for s in _statuses(job))
        return replicas == ready

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        statuses = {s.get("name"): s for s in _statuses(job)}
        out = []
        for rjob in _replicated_jobs(job):
            succeeded = int((statuses.get(rjob.get("name")) or {}).get("succeeded") or 0)
            if 0 < succeeded <= _replicas(rjob):
                out.append(
                    ReclaimablePod(
                        str(rjob.get("name", "")).lower(), succeeded * pods_per_replica(rjob)
                    )
                )
        return out


def _pod_set(job: Job, rjob: Job) -> PodSet:
    """With ``exclusive-topology``, each child Job is a slice that needs a domain of its own."""
    template = deep_copy(((rjob.get("template") or {}).get("spec") or {}).get("template") or {})
    replicas, per_job = _replicas(rjob), pods_per_replica(rjob)
    level = _annotation(rjob.get("template") or {}, EXCLUSIVE_TOPOLOGY) or _annotation(
        job, EXCLUSIVE_TOPOLOGY
    )
    request = None
    if level:
        request = {
            "podSetSliceRequiredTopology": level,
            "podSetSliceSize": per_job,
            "podIndexLabel": "batch.kubernetes.io/job-completion-index",
            "subGroupIndexLabel": JOB_INDEX_LABEL,
            "subGroupCount": replicas,
        }
    name = str(rjob.get("name", "")).lower()
    return PodSet(name, replicas * per_job, template, None, request, exclusive=bool(level))


def _annotation(obj: Job, key: str) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value else None


def pods_per_replica(rjob: Job) -> int:
    """``min(parallelism, completions)`` of the replicatedJob's Job (parallelism defaults to 1)."""
    spec = (rjob.get("template") or {}).get("spec") or {}
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    return min(parallelism, int(completions)) if completions is not None else parallelism


def _replicas(rjob: Job) -> int:
    return int(rjob.get("replicas", 1))


def _replicated_jobs(job: Job) -> list[Job]:
    return list((job.get("spec") or {}).get("replicatedJobs") or ())


def _statuses(job: Job) -> list[Job]:
    return list((job.get("status") or {}).get("replicatedJobsStatus") or ())


def _paths(job: Job) -> list[Path]:
    return [
        ("spec", "replicatedJobs", i, "template", "spec", "template")
        for i in range(len(_replicated_jobs(job)))
    ]


@hookimpl
def kq_register_job_integrations(register: Register) -> None:
    register(JobSet)
