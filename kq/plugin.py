"""What a stage plugin may import: the types of the contracts in ``kq.hookspecs``.

Queueing strategies, flavor assigners and preemption policies are registered through the
``kq_register_*`` hooks and chosen per ClusterQueue by annotation (``kq.dev/queueing-strategy``,
``kq.dev/flavor-assignment``, ``kq.dev/preemption-policy``); a name nobody registered makes the
ClusterQueue ``Active=False`` (reason ``UnknownPlugin``). Import from here, not from the core's
modules, so the core can change behind it. Admission-check controllers use
``kq.admissionchecks``; job integrations ``kq.jobframework``.
"""

from kq.api.clusterqueue import ClusterQueue
from kq.api.quotas import FlavorResource
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.hookspecs import Register, hookimpl
from kq.queue.requeue import RequeueReason
from kq.queue.strategy import QueueingStrategy
from kq.scheduler.modes import FlavorOption, Mode
from kq.scheduler.protocols import FlavorAssigner, Preemptor, Target
from kq.workload.info import WorkloadInfo

__all__ = [
    "ClusterQueue",
    "ClusterQueueSnapshot",
    "FlavorAssigner",
    "FlavorOption",
    "FlavorResource",
    "Mode",
    "Preemptor",
    "QueueingStrategy",
    "Register",
    "RequeueReason",
    "Snapshot",
    "Target",
    "WorkloadInfo",
    "hookimpl",
]
