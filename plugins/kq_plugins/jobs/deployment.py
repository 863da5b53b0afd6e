"""Deployments (framework ``deployment``), as Kueue's ``pkg/controller/jobs/deployment``.

Kq makes no Workload for a Deployment: its webhook (on create and update) marks the pod
template ``kueue.x-k8s.io/pod-suspending-parent: deployment`` and copies the managed, queue and
priority-class labels into it, so each replica pod is a plain pod the ``pod`` integration gates
and queues on its own (one Workload per pod). Scaling up adds gated pods admitted one by one;
scaling down deletes pods, and their Workloads go with them. A preempted pod is deleted and
its ReplicaSet makes a new, gated one. Enabling it enables ``pod`` for such pods only.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import GroupVersionKind, Job
from kq_plugins.jobs import serving

FRAMEWORK = "deployment"


class Deployment(serving.PodOwner):
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

    def is_active(self, job: Job) -> bool:
        return serving.ready_replicas(job) > 0


@hookimpl
def kq_register_job_integrations(register: Register) -> None:
    register(Deployment)
