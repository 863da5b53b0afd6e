"""Deployments (framework ``deployment``), as Kueue's ``pkg/controller/jobs/deployment``.

Kq makes no Workload for a Deployment: its webhook (on create and update) marks the pod
template ``kueue.x-k8s.io/pod-suspending-parent: deployment`` and copies the managed, queue and
priority-class labels into it, so each replica pod is a plain pod the ``pod`` integration gates
and queues on its own (one Workload per pod). Scaling up adds gated pods admitted one by one;
scaling down deletes pods, and their Workloads go with them. A preempted pod is deleted and
its ReplicaSet makes a new, gated one. Enabling it enables ``pod`` for such pods only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import FieldError, Finished, GroupVersionKind, Job, PodSet, PodSetInfo
from kq.jobframework.objects import deep_copy
from kq_plugins.jobs import serving

FRAMEWORK = "deployment"


class Deployment:
    NAME: ClassVar[str] = FRAMEWORK
    GVK: ClassVar[GroupVersionKind] = GroupVersionKind("apps", "v1", "Deployment")
    IMPLICITLY_ENABLES: ClassVar[tuple[str, ...]] = ("pod",)
    DEFAULT_ON_UPDATE: ClassVar[bool] = True
    """Upstream's defaulter runs on update too: a new queue name reaches the template."""

    def is_suspended(self, job: Job) -> bool:
        """Whether the template is marked and carries the Deployment's queue and priority."""
        if serving.parent_of_template(job) != FRAMEWORK:
            return False
        pod_labels = serving.template_labels(job)
        wanted = serving.owner_labels(job)
        in_template = {
            k: pod_labels[k]
            for k in (serving.QUEUE_LABEL, serving.PRIORITY_CLASS_LABEL)
            if k in pod_labels
        }
        return in_template == wanted

    def suspend(self, job: Job) -> dict[str, Any]:
        return serving.mark_template(job, FRAMEWORK, pod_labels=True)

    # The pods are the jobs: the Deployment itself is never reconciled (``skip``).
    def pod_sets(self, job: Job) -> list[PodSet]:
        return []

    def run_with_pod_set_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        return deep_copy(job)

    def restore_pod_sets_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        return deep_copy(job)

    def finished(self, job: Job) -> Finished | None:
        return None

    def is_active(self, job: Job) -> bool:
        return serving.ready_replicas(job) > 0

    def pods_ready(self, job: Job) -> bool:
        return False

    def skip(self, job: Job) -> bool:
        return True

    def validate_on_create(self, job: Job) -> list[FieldError]:
        return []

    def validate_on_update(self, old: Job, new: Job) -> list[FieldError]:
        return serving.queue_change_errors(old, new) + serving.priority_change_errors(old, new)


@hookimpl
def kq_register_job_integrations(register: Register) -> None:
    register(Deployment)
