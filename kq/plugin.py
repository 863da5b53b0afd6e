"""What a stage plugin may import: the types of the contracts in ``kq.hookspecs``.

Queueing strategies, flavor assigners, preemption and hot-swap policies are registered through
the ``kq_register_*`` hooks and chosen per ClusterQueue by annotation
(``kq.dev/queueing-strategy``, ``kq.dev/flavor-assignment``, ``kq.dev/preemption-policy``,
``kq.dev/hot-swap``); a name nobody registered makes the ClusterQueue ``Active=False`` (reason
``UnknownPlugin``). Import from here, not from the core's modules, so the core can change behind
it. Admission-check controllers use ``kq.admissionchecks``; job integrations ``kq.jobframework``.
"""

from kq.api.clusterqueue import ClusterQueue
from kq.api.quotas import FlavorResource
from kq.api.topology import TopologyAssignment
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.cache.topology import TopologyView, placements_of
from kq.hookspecs import Register, hookimpl
from kq.queue.requeue import RequeueReason
from kq.queue.strategy import QueueingStrategy
from kq.scheduler.modes import FlavorOption, Mode
from kq.scheduler.placement import Unplaced, affected_slices, keep_except, place, request_for
from kq.scheduler.protocols import (
    FlavorAssigner,
    HotSwapPolicy,
    Preemptor,
    Recovery,
    Target,
)
from kq.workload.info import WorkloadInfo

__all__ = [
    "ClusterQueue",
    "ClusterQueueSnapshot",
    "FlavorAssigner",
    "FlavorOption",
    "FlavorResource",
    "HotSwapPolicy",
    "Mode",
    "Preemptor",
    "QueueingStrategy",
    "Recovery",
    "Register",
    "RequeueReason",
    "Snapshot",
    "Target",
    "TopologyAssignment",
    "TopologyView",
    "Unplaced",
    "WorkloadInfo",
    "affected_slices",
    "hookimpl",
    "keep_except",
    "place",
    "placements_of",
    "request_for",
]
