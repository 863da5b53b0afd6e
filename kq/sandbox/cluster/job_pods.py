"""A batch/v1 Job's spec as its controller reads it, and the pods built from it.

Shared by ``job_tracking`` (counting finished pods) and ``job_controller`` (the reconcile pass).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kq.sandbox.cluster.actions import Obj, controller_ref, meta
from kq.sandbox.cluster.exclusive import with_exclusive_affinity
from kq.sandbox.cluster.podinfo import condition

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
DEFAULT_BACKOFF_LIMIT = 6


def job_spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job.get("spec") or {}


def indexed(job: Mapping[str, Any]) -> bool:
    return job_spec(job).get("completionMode") == "Indexed"


def parallelism(job: Mapping[str, Any]) -> int:
    value = job_spec(job).get("parallelism")
    return 1 if value is None else int(value)


def completions(job: Mapping[str, Any]) -> int | None:
    value = job_spec(job).get("completions")
    return None if value is None else int(value)


def backoff_limit(job: Mapping[str, Any]) -> int:
    return int(job_spec(job).get("backoffLimit", DEFAULT_BACKOFF_LIMIT))


def true(obj: Mapping[str, Any], type_: str) -> bool:
    """Whether ``obj`` has the condition ``type_`` with status True."""
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


def is_finished(job: Mapping[str, Any]) -> bool:
    return true(job, "Complete") or true(job, "Failed")


def tracked(pod: Mapping[str, Any]) -> bool:
    """Whether the pod still holds the Job's tracking finalizer (it is not counted yet)."""
    return TRACKING_FINALIZER in (meta(pod).get("finalizers") or ())


def pod_index(pod: Mapping[str, Any]) -> int | None:
    raw = (meta(pod).get("annotations") or {}).get(INDEX_KEY)
    try:
        return None if raw is None else int(raw)
    except ValueError:
        return None


def parse_indexes(text: str) -> set[int]:
    """``"0-2,5"`` → ``{0, 1, 2, 5}`` (the ``completedIndexes`` format)."""
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    ranges: list[str] = []
    for i in sorted(indexes):
        if ranges and ranges[-1].split("-")[-1] == str(i - 1):
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{i}"
        else:
            ranges.append(str(i))
    return ",".join(ranges)


def build_pod(job: Mapping[str, Any], name: str, index: int | None) -> Obj:
    """The pod the Job creates, from the Job's pod template as it is right now."""
    m = meta(job)
    template = copy.deepcopy(job_spec(job).get("template") or {})
    tmeta = template.get("metadata") or {}
    uid, job_name = str(m["uid"]), str(m["name"])
    labels = {
        **(tmeta.get("labels") or {}),
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": job_name,
        "controller-uid": uid,
        "job-name": job_name,
    }
    annotations = dict(tmeta.get("annotations") or {})
    spec: Obj = template.get("spec") or {}
    if index is not None:
        labels[INDEX_KEY] = annotations[INDEX_KEY] = str(index)
        env = {
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{INDEX_KEY}']"}},
        }
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            container["env"] = [*(container.get("env") or []), env]
        spec.setdefault("hostname", f"{job_name}-{index}")
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": m.get("namespace", "default"),
            "labels": labels,
            "annotations": annotations,
            "finalizers": [TRACKING_FINALIZER],
            "ownerReferences": [controller_ref(job)],
        },
        "spec": spec,
    }
    return with_exclusive_affinity(pod)
