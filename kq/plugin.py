"""What a stage plugin may import: the types of the contracts in ``kq.hookspecs``.

Queueing strategies, flavor assigners, preemption and hot-swap policies are registered through
the ``kq_register_*`` hooks and chosen per ClusterQueue by annotation
(``kq.dev/queueing-strategy``, ``kq.dev/flavor-assignment``, ``kq.dev/preemption-policy``,
``kq.dev/hot-swap``); a name nobody registered makes the ClusterQueue ``Active=False`` (reason
``UnknownPlugin``). Import from here, not from the core's modules, so the core can change behind
it. Admission-check controllers use ``kq.admissionchecks``; job integrations ``kq.jobframework``.
"""

from kq.api.clusterqueue import TRY_NEXT_FLAVOR, ClusterQueue
from kq.api.conditions import find as find_condition
from kq.api.quotas import FlavorResource
from kq.api.topology import TopologyAssignment
from kq.api.workload import EVICTED, QUOTA_RESERVED
from kq.cache.fair_share import DRS, dominant_resource_share
from kq.cache.fair_share import NEGATIVE as NEGATIVE_DRS
from kq.cache.fair_share import compare as compare_drs
from kq.cache.quota_tree import QuotaNode
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.cache.topology import TopologyView, placements_of
from kq.hookspecs import Register, hookimpl
from kq.queue.requeue import RequeueReason
from kq.queue.strategy import QueueingStrategy
from kq.scheduler.fungibility import choose as choose_by_fungibility
from kq.scheduler.modes import FlavorOption, Mode
from kq.scheduler.placement import Unplaced, affected_slices, keep_except, place, request_for
from kq.scheduler.protocols import (
    FlavorAssigner,
    HotSwapPolicy,
    Preemptor,
    Recovery,
    Target,
)
from kq.scheduler.victims import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
)
from kq.workload.info import WorkloadInfo

__all__ = [
    "DRS",
    "EVICTED",
    "IN_CLUSTER_QUEUE",
    "IN_COHORT_FAIR_SHARING",
    "IN_COHORT_RECLAIM_WHILE_BORROWING",
    "IN_COHORT_RECLAMATION",
    "NEGATIVE_DRS",
    "QUOTA_RESERVED",
    "TRY_NEXT_FLAVOR",
    "ClusterQueue",
    "ClusterQueueSnapshot",
    "FlavorAssigner",
    "FlavorOption",
    "FlavorResource",
    "HotSwapPolicy",
    "Mode",
    "Preemptor",
    "QueueingStrategy",
    "QuotaNode",
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
    "choose_by_fungibility",
    "compare_drs",
    "dominant_resource_share",
    "find_condition",
    "hookimpl",
    "keep_except",
    "place",
    "placements_of",
    "request_for",
]
