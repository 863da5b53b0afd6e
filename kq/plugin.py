"""What a stage plugin may import: the types of the contracts in ``kq.hookspecs``.

Queueing strategies, flavor assigners, preemption and hot-swap policies are registered through
the ``kq_register_*`` hooks and chosen per ClusterQueue by annotation
(``kq.dev/queueing-strategy``, ``kq.dev/flavor-assignment``, ``kq.dev/preemption-policy``,
``kq.dev/hot-swap``); a name nobody registered makes the ClusterQueue ``Active=False`` (reason
``UnknownPlugin``). Import from here, not from the core's modules, so the core can change behind
it. Admission-check controllers use ``kq.admissionchecks``; job integrations ``kq.jobframework``.

A plugin that needs I/O of its own (watch kinds, write status) registers a ``PluginController``
through ``kq_register_controllers``; kq's Budget API (``budgets.kq.dev``) is here too, for the
built-in ``budgets`` plugin and any other that reads Budgets.
"""

from kq.api.clusterqueue import TRY_NEXT_FLAVOR, USAGE_BASED_ADMISSION_FAIR_SHARING, ClusterQueue
from kq.api.conditions import find as find_condition
from kq.api.priority import LOWERED_BY_BUDGET_ANNOTATION, PRIORITY_BOOST_ANNOTATION, boost_error
from kq.api.quantity import format_amount, parse_quantity, to_amount
from kq.api.quotas import FlavorResource
from kq.api.timestamps import parse_time
from kq.api.topology import TopologyAssignment
from kq.api.workload import EVICTED, QUOTA_RESERVED
from kq.budgets import (
    BORROW,
    LOWER_PRIORITY,
    Budget,
    BudgetError,
    Window,
    parse_budget,
    resource_hours,
)
from kq.cache.fair_share import DRS, dominant_resource_share
from kq.cache.fair_share import NEGATIVE as NEGATIVE_DRS
from kq.cache.fair_share import compare as compare_drs
from kq.cache.quota_tree import QuotaNode
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.cache.topology import TopologyView, placements_of
from kq.config import AdmissionFairSharing as AdmissionFairSharingConfig
from kq.config import KqConfig
from kq.hookspecs import Register, hookimpl
from kq.observability.metric_options import report_admission_fair_sharing_usage
from kq.observability.metrics import REGISTRY as METRICS_REGISTRY
from kq.plugins.controllers import ControllerContext, PluginController, Step
from kq.queue.order import QueueOrder
from kq.queue.requeue import RequeueReason
from kq.queue.strategy import QueueingStrategy
from kq.runtime.errors import ApiError
from kq.runtime.events import EventRecorder
from kq.runtime.resources import (
    BUDGETS,
    CLUSTER_QUEUES,
    COHORTS,
    LOCAL_QUEUES,
    WORKLOADS,
    Resource,
)
from kq.runtime.store import Store
from kq.scheduler.decisions import Admit
from kq.scheduler.fungibility import choose as choose_by_fungibility
from kq.scheduler.modes import AdmissionTerms, FlavorOption, Mode
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
from kq.workload.status import condition as make_condition
from kq.workload.status import rfc3339

__all__ = [
    "BORROW",
    "BUDGETS",
    "CLUSTER_QUEUES",
    "COHORTS",
    "DRS",
    "EVICTED",
    "IN_CLUSTER_QUEUE",
    "IN_COHORT_FAIR_SHARING",
    "IN_COHORT_RECLAIM_WHILE_BORROWING",
    "IN_COHORT_RECLAMATION",
    "LOCAL_QUEUES",
    "LOWERED_BY_BUDGET_ANNOTATION",
    "LOWER_PRIORITY",
    "METRICS_REGISTRY",
    "NEGATIVE_DRS",
    "PRIORITY_BOOST_ANNOTATION",
    "QUOTA_RESERVED",
    "TRY_NEXT_FLAVOR",
    "USAGE_BASED_ADMISSION_FAIR_SHARING",
    "WORKLOADS",
    "AdmissionFairSharingConfig",
    "AdmissionTerms",
    "Admit",
    "ApiError",
    "Budget",
    "BudgetError",
    "ClusterQueue",
    "ClusterQueueSnapshot",
    "ControllerContext",
    "EventRecorder",
    "FlavorAssigner",
    "FlavorOption",
    "FlavorResource",
    "HotSwapPolicy",
    "KqConfig",
    "Mode",
    "PluginController",
    "Preemptor",
    "QueueOrder",
    "QueueingStrategy",
    "QuotaNode",
    "Recovery",
    "Register",
    "RequeueReason",
    "Resource",
    "Snapshot",
    "Step",
    "Store",
    "Target",
    "TopologyAssignment",
    "TopologyView",
    "Unplaced",
    "Window",
    "WorkloadInfo",
    "affected_slices",
    "boost_error",
    "choose_by_fungibility",
    "compare_drs",
    "dominant_resource_share",
    "find_condition",
    "format_amount",
    "hookimpl",
    "keep_except",
    "make_condition",
    "parse_budget",
    "parse_quantity",
    "parse_time",
    "place",
    "placements_of",
    "report_admission_fair_sharing_usage",
    "request_for",
    "resource_hours",
    "rfc3339",
    "to_amount",
]
