"""Label and annotation keys, and the event reasons the job framework uses (Kueue's spelling)."""

from __future__ import annotations

from typing import Final

from kq.api.topology import EXCLUSIVE_TOPOLOGY
from kq.api.workload import REQUEUE_AT_ONCE

QUEUE_NAME_KEY: Final = "kueue.x-k8s.io/queue-name"
"""A label upstream; kq also honours the annotation of the same key that Kueue v0.15 removed."""
MAX_EXEC_TIME_LABEL: Final = "kueue.x-k8s.io/max-exec-time-seconds"
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"
PROVREQ_ANNOTATION_PREFIX: Final = "provreq.kueue.x-k8s.io/"
RESOURCE_IN_USE_FINALIZER: Final = "kueue.x-k8s.io/resource-in-use"
DEFAULT_LOCAL_QUEUE: Final = "default"

POD_SET_LABEL: Final = "kueue.x-k8s.io/podset"
EXCLUSIVE_TOPOLOGY_ANNOTATION: Final = EXCLUSIVE_TOPOLOGY
"""JobSet's one-child-Job-per-domain annotation, which kq admits as exclusive slices."""
LOCAL_QUEUE_LABEL: Final = "kueue.x-k8s.io/local-queue-name"
CLUSTER_QUEUE_LABEL: Final = "kueue.x-k8s.io/cluster-queue-name"


MAX_POD_SETS: Final = 18

# Event reasons on the job object (Kueue's jobframework/events.go).
REASON_STARTED: Final = "Started"
REASON_SUSPENDED: Final = "Suspended"
REASON_STOPPED: Final = "Stopped"
REASON_CREATED_WORKLOAD: Final = "CreatedWorkload"
REASON_DELETED_WORKLOAD: Final = "DeletedWorkload"
REASON_UPDATED_WORKLOAD: Final = "UpdatedWorkload"
REASON_FINISHED_WORKLOAD: Final = "FinishedWorkload"
REASON_ERR_WORKLOAD_COMPOSE: Final = "ErrWorkloadCompose"
REASON_WPC_NOT_FOUND: Final = "WorkloadPriorityClassNotFound"
REASON_PRIORITY_CLASS_NOT_FOUND: Final = "PriorityClassNotFound"
REASON_DEPRECATED_QUEUE_ANNOTATION: Final = "DeprecatedQueueNameAnnotation"
"""kq's own reason: upstream no longer reads the annotation, so it has no event for it."""

# Workload Finished reasons.
FINISHED_SUCCEEDED: Final = "Succeeded"
FINISHED_FAILED: Final = "Failed"
FINISHED_FAILED_TO_START: Final = "FailedToStart"

REQUEUE_ON_EVICTION: Final = REQUEUE_AT_ONCE

# On a pod template: the serving owner whose pods the pod integration gates and queues.
SUSPENDING_PARENT_ANNOTATION: Final = "kueue.x-k8s.io/pod-suspending-parent"

# Framework names Kueue v0.19 knows in ``integrations.frameworks``: one kq has no plugin for
# is warned about at start-up (Kueue's default configuration lists most of them); any other
# name is a configuration error.
KUEUE_FRAMEWORKS: Final = frozenset(
    {
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "kubeflow.org/mpijob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "kubeflow.org/xgboostjob",
        "kubeflow.org/jaxjob",
        "ray.io/rayjob",
        "ray.io/raycluster",
        "ray.io/rayservice",
        "workload.codeflare.dev/appwrapper",
        "trainer.kubeflow.org/trainjob",
        "sparkoperator.k8s.io/sparkapplication",
        "pod",
        "deployment",
        "statefulset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    }
)
