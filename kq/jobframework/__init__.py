"""The job framework: how jobs of every kind become Workloads, start on admission and stop.

``interface`` is the contract an integration implements (plugins in ``kq_plugins.jobs``);
everything else is pure logic shared by all kinds. The I/O loop feeds ``reconciler.decide``
and the webhook functions, and applies the actions they return.
"""

from kq.api.quantity import QuantityError, parse_quantity
from kq.jobframework.actions import Action
from kq.jobframework.constants import EXCLUSIVE_TOPOLOGY_ANNOTATION
from kq.jobframework.interface import (
    ComposableJob,
    FieldError,
    Finished,
    GenericJob,
    GroupVersionKind,
    Job,
    JobStep,
    JobWithCustomStop,
    JobWithCustomValidation,
    JobWithPriorityClass,
    JobWithReclaimablePods,
    JobWithSkip,
    ReclaimablePod,
)
from kq.jobframework.podset import PodSet, PodSetInfo, PodSetInfoError
from kq.jobframework.reconciler import ClusterFacts, decide, job_deleted

__all__ = [
    "EXCLUSIVE_TOPOLOGY_ANNOTATION",
    "Action",
    "ClusterFacts",
    "ComposableJob",
    "FieldError",
    "Finished",
    "GenericJob",
    "GroupVersionKind",
    "Job",
    "JobStep",
    "JobWithCustomStop",
    "JobWithCustomValidation",
    "JobWithPriorityClass",
    "JobWithReclaimablePods",
    "JobWithSkip",
    "PodSet",
    "PodSetInfo",
    "PodSetInfoError",
    "QuantityError",
    "ReclaimablePod",
    "decide",
    "job_deleted",
    "parse_quantity",
]
