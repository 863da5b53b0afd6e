"""StatefulSets (framework ``statefulset``), after Kueue's ``pkg/controller/jobs/statefulset``.

The set's pods are one pod group, as upstream's: the webhook marks the pod template
``kueue.x-k8s.io/pod-suspending-parent: statefulset`` (with the managed, queue and priority
labels), so the pod webhook gates every pod; ``statefulset_pods`` then makes each gated pod a
member of the set's group, ``statefulset-<name>-<hash>``, of ``replicas`` pods with fast
admission (``pod_group``): the ``pod`` integration builds the group's Workload with pod 0, one
pod set ``main`` counting every replica, and ungates each pod as it comes, so an
``OrderedReady`` set starts pod by pod. The set is one of the Workload's owners, so it outlives
a preemption that deletes the pods. As upstream, ``replicas`` may only change to or from 0; at 0
the Workload is deleted, and its quota released (upstream keeps it on hold).
"""

from __future__ import annotations

from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import FieldError, GroupVersionKind, Job
from kq.jobframework.naming import workload_name
from kq.jobframework.objects import dig, name, uid
from kq_plugins.jobs import serving

FRAMEWORK = "statefulset"
GVK = GroupVersionKind("apps", "v1", "StatefulSet")


def replicas(sts: Job) -> int:
    raw = dig(sts, "spec", "replicas")
    return 1 if raw is None else int(raw)


def group_workload_name(sts: Job) -> str:
    """The set's pod group and Workload: its name and uid hashed, as upstream's."""
    return workload_name(name(sts), uid(sts), GVK)


class StatefulSet(serving.PodOwner):
    NAME: ClassVar[str] = FRAMEWORK
    GVK: ClassVar[GroupVersionKind] = GVK
    IMPLICITLY_ENABLES: ClassVar[tuple[str, ...]] = ("pod",)

    def is_suspended(self, job: Job) -> bool:
        """Marked for kq (its pods come gated), or by another framework (a LeaderWorkerSet's
        sets), which is then left alone."""
        return bool(serving.parent_of_template(job))

    def suspend(self, job: Job) -> dict[str, Any]:
        return serving.mark_template(job, FRAMEWORK, pod_labels=True)

    def is_active(self, job: Job) -> bool:
        return False  # its pods are the jobs

    def validate_on_update(self, old: Job, new: Job) -> list[FieldError]:
        if serving.parent_of_template(new) not in ("", FRAMEWORK):
            return []  # another framework's set (upstream skips it too)
        errors = super().validate_on_update(old, new)
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
