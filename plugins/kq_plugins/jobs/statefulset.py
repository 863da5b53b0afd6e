"""StatefulSets (framework ``statefulset``), after Kueue's ``pkg/controller/jobs/statefulset``.

One Workload per StatefulSet, ``statefulset-<name>-<hash>``, with one pod set ``main`` of
``replicas`` pods. The webhook marks the pod template ``kueue.x-k8s.io/pod-suspending-parent:
statefulset`` (and copies the queue labels into it, so the pod webhook gates each pod); the
``pod`` integration leaves such pods to this one. Admission is written on the StatefulSet
(``ADMISSION_ANNOTATION``) and ``statefulset_pods`` ungates its pods as they come, one by one
under ``OrderedReady`` (upstream's fast admission); a stop removes it and that controller
deletes the running pods, which come back gated. As upstream, ``replicas`` may only change to
or from 0: at 0 the Workload is deleted, and its quota released.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import FieldError, Finished, GroupVersionKind, Job, PodSet, PodSetInfo
from kq.jobframework.objects import annotations_of, deep_copy, dig
from kq_plugins.jobs import serving

FRAMEWORK = "statefulset"
ADMISSION_ANNOTATION = "kq.dev/pod-set-info"
"""The admitted pod set's node selector and tolerations, JSON; present while admitted."""


def replicas(sts: Job) -> int:
    raw = dig(sts, "spec", "replicas")
    return 1 if raw is None else int(raw)


class StatefulSet:
    NAME: ClassVar[str] = FRAMEWORK
    GVK: ClassVar[GroupVersionKind] = GroupVersionKind("apps", "v1", "StatefulSet")
    IMPLICITLY_ENABLES: ClassVar[tuple[str, ...]] = ("pod",)

    def is_suspended(self, job: Job) -> bool:
        """Marked for kq (its pods come gated) and not admitted; a set whose pods another
        framework marked (a LeaderWorkerSet's) counts as suspended, so it is left alone."""
        parent = serving.parent_of_template(job)
        if parent not in ("", FRAMEWORK):
            return True
        return bool(parent) and ADMISSION_ANNOTATION not in annotations_of(job)

    def suspend(self, job: Job) -> dict[str, Any]:
        out = serving.mark_template(job, FRAMEWORK, pod_labels=True)
        out["metadata"].get("annotations", {}).pop(ADMISSION_ANNOTATION, None)
        return out

    def pod_sets(self, job: Job) -> list[PodSet]:
        spec = deep_copy(dig(job, "spec", "template", "spec") or {})
        return [PodSet("main", replicas(job), {"spec": spec})]

    def run_with_pod_set_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        out = deep_copy(job)
        info = infos[0] if infos else PodSetInfo("main", replicas(job))
        admitted = {
            "nodeSelector": dict(info.node_selector or {}),
            "tolerations": [dict(t) for t in info.tolerations or ()],
        }
        metadata = out.setdefault("metadata", {})
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            ADMISSION_ANNOTATION: json.dumps(admitted, sort_keys=True),
        }
        return out

    def restore_pod_sets_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        out = deep_copy(job)
        (out.get("metadata") or {}).get("annotations", {}).pop(ADMISSION_ANNOTATION, None)
        return out

    def finished(self, job: Job) -> Finished | None:
        return None  # a server never finishes

    def is_active(self, job: Job) -> bool:
        return False  # its pods are deleted on a stop; the quota goes at once, as a pod's

    def pods_ready(self, job: Job) -> bool:
        return int(dig(job, "status", "readyReplicas") or 0) >= replicas(job)

    def skip(self, job: Job) -> bool:
        """Another framework's set, or scaled to 0 and stopped (its Workload went with the
        scale-down): nothing to queue."""
        if serving.parent_of_template(job) not in ("", FRAMEWORK):
            return True
        return replicas(job) == 0 and self.is_suspended(job)

    def validate_on_create(self, job: Job) -> list[FieldError]:
        return []

    def validate_on_update(self, old: Job, new: Job) -> list[FieldError]:
        if serving.parent_of_template(new) not in ("", FRAMEWORK):
            return []  # another framework's set (upstream skips it too)
        errors = serving.queue_change_errors(old, new) + serving.priority_change_errors(old, new)
        before, after = replicas(old), replicas(new)
        if before and after and before != after:
            errors.append(FieldError("spec.replicas", "Invalid", serving.IMMUTABLE, after))
        if before == 0 and after and int(dig(new, "status", "replicas") or 0) > 0:
            errors.append(
                FieldError("spec.replicas", "Forbidden", "scaling down is still in progress")
            )
        return errors


@hookimpl
def kq_register_job_integrations(register: Register) -> None:
    register(StatefulSet)
