"""batch/v1 Job: one PodSet ``main``; partial admission through ``job-min-parallelism``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import (
    Finished,
    GroupVersionKind,
    Job,
    JobStep,
    PodSet,
    PodSetInfo,
    ReclaimablePod,
)
from kq.jobframework.objects import annotations_of, condition_is_true, deep_copy, find_condition
from kq.jobframework.podset import check_info_count
from kq.jobframework.templates import Path, merge_templates, restore_templates, set_in

MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"
COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-completions-equal-parallelism"
STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"
"""Set while a stop is half done, so the job does not count as suspended until restored."""

# Labels the Job controller owns; all but ``batch.kubernetes.io/job-name`` stay off the
# Workload and survive a restore.
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
MANAGED_LABELS = (
    "job-name",
    "controller-uid",
    JOB_NAME_LABEL,
    "batch.kubernetes.io/controller-uid",
)
TEMPLATE: Path = ("spec", "template")


class BatchJob:
    NAME: ClassVar[str] = "batch/job"
    GVK: ClassVar[GroupVersionKind] = GroupVersionKind("batch", "v1", "Job")

    def is_suspended(self, job: Job) -> bool:
        spec = job.get("spec") or {}
        return bool(spec.get("suspend")) and annotations_of(job).get(STOPPING_ANNOTATION) != "true"

    def suspend(self, job: Job) -> dict[str, Any]:
        return set_in(job, ("spec", "suspend"), True)

    def pod_sets(self, job: Job) -> list[PodSet]:
        template = deep_copy((job.get("spec") or {}).get("template") or {})
        template_labels = (template.get("metadata") or {}).get("labels")
        if template_labels:
            for label in MANAGED_LABELS:
                if label != JOB_NAME_LABEL:
                    template_labels.pop(label, None)
        return [PodSet("main", pods_count(job), template, min_parallelism(job))]

    def run_with_pod_set_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        check_info_count(infos, 1)
        out = set_in(job, ("spec", "suspend"), False)
        if min_parallelism(job) is not None:
            out = _set_parallelism(out, infos[0].count)
        return merge_templates(out, [TEMPLATE], infos)

    def restore_pod_sets_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        if not infos:
            return deep_copy(job)
        info = infos[0]
        out = deep_copy(job)
        if (
            min_parallelism(job) is not None
            and (job.get("spec") or {}).get("parallelism") != info.count
        ):
            out = _set_parallelism(out, info.count)
        current = ((out["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
        kept = {k: current[k] for k in MANAGED_LABELS if k in current}
        if kept:
            info = info.merge(PodSetInfo(info.name, info.count, labels=kept))
        return restore_templates(out, [TEMPLATE], [info])

    def finished(self, job: Job) -> Finished | None:
        for type_ in ("Complete", "Failed"):
            if condition_is_true(job, type_):
                message = str((find_condition(job, type_) or {}).get("message", ""))
                return Finished(type_ != "Failed", message)
        return None

    def is_active(self, job: Job) -> bool:
        return bool((job.get("status") or {}).get("active"))

    def pods_ready(self, job: Job) -> bool:
        status = job.get("status") or {}
        uncounted = (status.get("uncountedTerminatedPods") or {}).get("succeeded") or ()
        ready = int(status.get("succeeded") or 0) + int(status.get("ready") or 0) + len(uncounted)
        return ready >= pods_count(job)

    def stop(self, job: Job, infos: Sequence[PodSetInfo]) -> list[JobStep]:
        """Suspend (marked as stopping), clear ``startTime``, then restore and unmark.

        Kubernetes lets a Job's scheduling directives change only while it is suspended and
        has no ``startTime``, hence the three writes, as upstream does.
        """
        steps = []
        current: Job = job
        if not self.is_suspended(job):
            current = set_in(
                self.suspend(job), ("metadata", "annotations", STOPPING_ANNOTATION), "true"
            )
            steps.append(JobStep(job=current))
        if (job.get("status") or {}).get("startTime"):
            steps.append(JobStep(status_patch={"status": {"startTime": None}}))
        restored = self.restore_pod_sets_info(current, infos)
        metadata_annotations = restored.get("metadata", {}).get("annotations") or {}
        if STOPPING_ANNOTATION in metadata_annotations:
            del metadata_annotations[STOPPING_ANNOTATION]
            if not metadata_annotations:
                del restored["metadata"]["annotations"]
        if restored != current:
            steps.append(JobStep(job=restored))
        return steps

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        """Pods no longer needed once fewer completions remain than parallel slots."""
        spec, status = job.get("spec") or {}, job.get("status") or {}
        parallelism = int(spec.get("parallelism", 1) or 0)
        completions = int(spec.get("completions") or parallelism)
        terminal = int(status.get("succeeded") or 0)
        if spec.get("completionMode") == "Indexed":
            indexes = _indexes(status.get("completedIndexes")) | _indexes(
                status.get("failedIndexes")
            )
            terminal = len({i for i in indexes if i < completions})
        remaining = max(completions - terminal, 0)
        if parallelism > 1 and terminal > 0 and remaining < parallelism:
            return [ReclaimablePod("main", parallelism - remaining)]
        return []


def pods_count(job: Job) -> int:
    """``min(parallelism, completions)``; the API server defaults parallelism to 1."""
    spec = job.get("spec") or {}
    parallelism = int(spec.get("parallelism", 1))
    completions = spec.get("completions")
    return min(parallelism, int(completions)) if completions is not None else parallelism


def min_parallelism(job: Job) -> int | None:
    raw = annotations_of(job).get(MIN_PARALLELISM_ANNOTATION)
    return int(raw) if raw is not None and re.fullmatch(r"[+-]?\d+", raw) else None


def _set_parallelism(job: Job, count: int) -> dict[str, Any]:
    out = set_in(job, ("spec", "parallelism"), count)
    if annotations_of(job).get(COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION, "").lower() in (
        "true",
        "1",
        "t",
    ):
        out["spec"]["completions"] = count
    return out


def _indexes(intervals: str | None) -> set[int]:
    """Indexes in a Job's ``completedIndexes`` form, e.g. ``"1,3-5"``."""
    out: set[int] = set()
    for part in (intervals or "").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


@hookimpl
def kq_register_job_integrations(register: Register) -> None:
    register(BatchJob)
