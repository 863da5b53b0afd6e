"""ClusterQueue, LocalQueue and Cohort: quotas, queueing and preemption policies."""

from __future__ import annotations

from typing import Any

from kq.crds.core import conditions, label_selector
from kq.crds.kueue.common import (
    fair_sharing,
    fair_sharing_status,
    kueue_crd,
    resource_groups,
    stop_policy,
    usage,
)
from kq.crds.schema import (
    PrinterColumn,
    Schema,
    array,
    boolean,
    dns_subdomain,
    integer,
    obj,
    string,
)


def _preemption() -> Schema:
    reclaim_out_of_cohort = obj(
        {
            "enable": boolean(),
            "reclaimMoreThanNominalQuota": boolean(),
        },
        description="Not an upstream Kueue field: it appears in GKE's documented Kueue and "
        "Hotswap manifests. kq accepts and keeps it so those manifests apply unchanged, but "
        "does not act on it.",
    )
    return obj(
        {
            "reclaimWithinCohort": string(
                enum=("Never", "LowerPriority", "Any"),
                default="Never",
                description="Whether to preempt other cohort members' borrowing workloads to "
                "reclaim nominal quota.",
            ),
            "withinClusterQueue": string(
                enum=("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
                default="Never",
                description="Whether to preempt this ClusterQueue's own admitted workloads.",
            ),
            "borrowWithinCohort": obj(
                {
                    "policy": string(
                        enum=("Never", "LowerPriority"),
                        default="Never",
                        description="Whether to preempt in the cohort while borrowing.",
                    ),
                    "maxPriorityThreshold": integer(
                        description="Only workloads at or below this priority may be preempted."
                    ),
                },
                default={},
            ),
            "reclaimOutOfCohort": reclaim_out_of_cohort,
        },
        default={},
        description="When pending workloads may preempt admitted ones.",
    )


def cluster_queue() -> dict[str, Any]:
    """ClusterQueue: cluster-wide quota, queueing strategy and preemption policy."""
    spec = obj(
        {
            "resourceGroups": resource_groups("ClusterQueue"),
            "cohort": dns_subdomain(description="Cohort whose members share unused quota."),
            "queueingStrategy": string(
                enum=("StrictFIFO", "BestEffortFIFO"),
                default="BestEffortFIFO",
                description="StrictFIFO blocks behind an inadmissible head; BestEffortFIFO "
                "lets later workloads through.",
            ),
            "namespaceSelector": label_selector(
                description="Namespaces that may submit here; unset matches none, {} matches all."
            ),
            "flavorFungibility": obj(
                {
                    "whenCanBorrow": string(
                        enum=("MayStopSearch", "TryNextFlavor", "Borrow"),
                        default="MayStopSearch",
                        description="Whether a flavor that fits by borrowing ends the search.",
                    ),
                    "whenCanPreempt": string(
                        enum=("MayStopSearch", "TryNextFlavor", "Preempt"),
                        default="TryNextFlavor",
                        description="Whether a flavor that fits by preempting ends the search.",
                    ),
                    "preference": string(
                        enum=("BorrowingOverPreemption", "PreemptionOverBorrowing"),
                        description="Tie-break when both fields are TryNextFlavor.",
                    ),
                },
                default={},
                description="How flavors are tried when the first does not fit.",
            ),
            "preemption": _preemption(),
            "admissionChecks": array(
                string(max_length=316),
                description="AdmissionChecks every workload admitted here must pass.",
            ),
            "admissionChecksStrategy": obj(
                {
                    "admissionChecks": array(
                        obj(
                            {
                                "name": string(max_length=316),
                                "onFlavors": array(
                                    dns_subdomain(),
                                    description="Flavors the check applies to; empty = all.",
                                ),
                            },
                            required=("name",),
                        )
                    )
                },
                description="AdmissionChecks per flavor (exclusive with admissionChecks).",
            ),
            "stopPolicy": stop_policy("ClusterQueue"),
            "fairSharing": fair_sharing(),
            "admissionScope": obj(
                {
                    "admissionMode": string(
                        description="UsageBasedAdmissionFairSharing or NoAdmissionFairSharing."
                    )
                },
                required=("admissionMode",),
            ),
        }
    )
    status = obj(
        {
            "conditions": conditions(description="Active tells whether it can admit workloads."),
            "flavorsReservation": usage(borrowed=True),
            "flavorsUsage": usage(borrowed=True),
            "pendingWorkloads": integer(description="Workloads waiting for admission."),
            "reservingWorkloads": integer(description="Workloads holding quota."),
            "admittedWorkloads": integer(description="Admitted workloads not finished yet."),
            "fairSharing": fair_sharing_status(),
        }
    )
    columns = (
        PrinterColumn(
            "Cohort", "string", ".spec.cohort", "Cohort that this ClusterQueue belongs to"
        ),
        PrinterColumn(
            "Strategy",
            "string",
            ".spec.queueingStrategy",
            "The queueing strategy used to prioritize workloads",
            priority=1,
        ),
        PrinterColumn(
            "Pending Workloads",
            "integer",
            ".status.pendingWorkloads",
            "Number of pending workloads",
        ),
        PrinterColumn(
            "Admitted Workloads",
            "integer",
            ".status.admittedWorkloads",
            "Number of admitted workloads that haven't finished yet",
            priority=1,
        ),
    )
    return kueue_crd(
        "ClusterQueue",
        "clusterqueues",
        namespaced=False,
        short_names=("cq",),
        spec=spec,
        status=status,
        columns=columns,
    )


def local_queue() -> dict[str, Any]:
    """LocalQueue: the namespaced queue users submit to, backed by a ClusterQueue."""
    spec = obj(
        {
            "clusterQueue": dns_subdomain(description="Backing ClusterQueue (immutable)."),
            "stopPolicy": stop_policy("LocalQueue"),
            "fairSharing": fair_sharing(),
        }
    )
    status = obj(
        {
            "conditions": conditions(description="Active tells whether it can submit workloads."),
            "pendingWorkloads": integer(),
            "reservingWorkloads": integer(),
            "admittedWorkloads": integer(),
            "flavorsReservation": usage(borrowed=False),
            "flavorUsage": usage(borrowed=False),
            "fairSharing": fair_sharing_status(),
        }
    )
    columns = (
        PrinterColumn("ClusterQueue", "string", ".spec.clusterQueue", "Backing ClusterQueue"),
        PrinterColumn(
            "Pending Workloads",
            "integer",
            ".status.pendingWorkloads",
            "Number of pending workloads",
        ),
        PrinterColumn(
            "Admitted Workloads",
            "integer",
            ".status.admittedWorkloads",
            "Number of admitted workloads that haven't finished yet.",
        ),
    )
    return kueue_crd(
        "LocalQueue",
        "localqueues",
        namespaced=True,
        short_names=("queue", "queues", "lq"),
        spec=spec,
        status=status,
        columns=columns,
    )


def cohort() -> dict[str, Any]:
    """Cohort: a node of the quota-sharing tree with its own optional quota."""
    spec = obj(
        {
            "parentName": dns_subdomain(description="Parent cohort; unset makes this a root."),
            "resourceGroups": resource_groups("cohort"),
            "fairSharing": fair_sharing(),
        }
    )
    status = obj({"fairSharing": fair_sharing_status()})
    return kueue_crd(
        "Cohort", "cohorts", namespaced=False, short_names=("co",), spec=spec, status=status
    )
