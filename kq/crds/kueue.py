"""kueue.x-k8s.io: the queueing API, written here as v1beta1, the version kq itself reads;
``kq.crds.kueue_v1beta2`` derives the v1beta2 version served beside it.

Field names, enums, defaults, short names and printer columns follow upstream Kueue's v1beta1
types so `kubectl get` and `kubectl apply` behave as they do against Kueue.
"""

from __future__ import annotations

from typing import Any

from kq.crds.core import conditions, label_selector, pod_template_spec, taint, toleration
from kq.crds.kueue_v1beta2 import with_v1beta2
from kq.crds.schema import (
    AGE_COLUMN,
    PrinterColumn,
    Schema,
    Version,
    array,
    boolean,
    crd,
    date_time,
    dns_label,
    dns_subdomain,
    integer,
    map_of,
    obj,
    preserve_unknown,
    quantity,
    string,
    string_map,
)

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta1"
CATEGORIES = ("kueue",)

STOP_POLICY = ("None", "Hold", "HoldAndDrain")
MAX_PODSETS = 18


def _kind(
    kind: str,
    plural: str,
    *,
    namespaced: bool,
    short_names: tuple[str, ...],
    spec: Schema | None,
    status: Schema | None = None,
    columns: tuple[PrinterColumn, ...] = (),
    top_level: dict[str, Schema] | None = None,
    required: tuple[str, ...] = (),
) -> dict[str, Any]:
    version = Version(
        VERSION,
        spec,
        status,
        printer_columns=columns,
        top_level=top_level or {},
        required=required,
    )
    return crd(
        group=GROUP,
        kind=kind,
        plural=plural,
        namespaced=namespaced,
        versions=[version],
        short_names=short_names,
        categories=CATEGORIES,
    )


def _stop_policy(what: str) -> Schema:
    return string(
        enum=STOP_POLICY,
        default="None",
        description=f"Hold stops admitting new workloads to this {what}; HoldAndDrain also "
        "evicts the admitted ones.",
    )


def _fair_sharing() -> Schema:
    return obj(
        {
            "weight": quantity(
                default=1,
                description="Share weight relative to siblings; 0 means an infinite share.",
            )
        },
        description="Fair-sharing parameters of this node of the cohort tree.",
    )


def _fair_sharing_status() -> Schema:
    return obj(
        {
            "weightedShare": integer(
                fmt="int64",
                description="Share of the most-borrowed resource above nominal quota, per 1000, "
                "divided by the weight.",
            ),
            "admissionFairSharingStatus": obj(
                {
                    "consumedResources": map_of(quantity()),
                    "lastUpdate": date_time(),
                },
                required=("consumedResources", "lastUpdate"),
            ),
        },
        required=("weightedShare",),
    )


def _resource_groups(owner: str) -> Schema:
    resource = obj(
        {
            "name": string(description="Resource name, matching coveredResources by position."),
            "nominalQuota": quantity(description="Quantity guaranteed to this " + owner + "."),
            "borrowingLimit": quantity(
                description="Most that may be borrowed from the cohort; unset means no limit. "
                "Needs a cohort."
            ),
            "lendingLimit": quantity(
                description="Most of the nominal quota that may be lent to the cohort; unset "
                "means all of it. Needs a cohort."
            ),
        },
        required=("name", "nominalQuota"),
    )
    flavor = obj(
        {
            "name": dns_subdomain(description="ResourceFlavor name."),
            "resources": array(resource, map_keys=("name",), min_items=1, max_items=64),
        },
        required=("name", "resources"),
    )
    group = obj(
        {
            "coveredResources": array(
                string(),
                min_items=1,
                max_items=64,
                description="Resources this group covers; a resource belongs to one group only. "
                "Upstream Kueue requires this list; kq also accepts manifests that omit it "
                "(GKE's documented examples do) and takes the resources named under the "
                "flavors instead.",
            ),
            "flavors": array(
                flavor,
                map_keys=("name",),
                min_items=1,
                max_items=64,
                description="Flavors in order of preference.",
            ),
        },
        required=("flavors",),
    )
    return array(group, list_type="atomic", max_items=16, description="Quota per flavor.")


def _usage(*, borrowed: bool) -> Schema:
    resource_fields: dict[str, Schema] = {
        "name": string(),
        "total": quantity(description="Total quantity used."),
    }
    if borrowed:
        resource_fields["borrowed"] = quantity(description="Quantity above the nominal quota.")
    flavor = obj(
        {
            "name": dns_subdomain(),
            "resources": array(
                obj(resource_fields, required=("name",)), map_keys=("name",), max_items=64
            ),
        },
        required=("name", "resources"),
    )
    return array(flavor, map_keys=("name",), max_items=64)


def resource_flavor() -> dict[str, Any]:
    """ResourceFlavor: node labels/taints/tolerations a quota is tied to."""
    spec = obj(
        {
            "nodeLabels": string_map(
                max_properties=8,
                atomic=True,
                description="Labels injected as nodeSelector into admitted pods.",
            ),
            "nodeTaints": array(
                taint(),
                list_type="atomic",
                max_items=8,
                description="Taints of these nodes; only workloads tolerating them get the flavor.",
            ),
            "tolerations": array(
                toleration(),
                list_type="atomic",
                max_items=8,
                description="Tolerations added to admitted pods.",
            ),
            "topologyName": dns_subdomain(description="Topology for topology-aware scheduling."),
        }
    )
    return _kind(
        "ResourceFlavor",
        "resourceflavors",
        namespaced=False,
        short_names=("flavor", "flavors", "rf"),
        spec=spec,
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
            "resourceGroups": _resource_groups("ClusterQueue"),
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
            "stopPolicy": _stop_policy("ClusterQueue"),
            "fairSharing": _fair_sharing(),
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
            "flavorsReservation": _usage(borrowed=True),
            "flavorsUsage": _usage(borrowed=True),
            "pendingWorkloads": integer(description="Workloads waiting for admission."),
            "reservingWorkloads": integer(description="Workloads holding quota."),
            "admittedWorkloads": integer(description="Admitted workloads not finished yet."),
            "fairSharing": _fair_sharing_status(),
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
    return _kind(
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
            "stopPolicy": _stop_policy("LocalQueue"),
            "fairSharing": _fair_sharing(),
        }
    )
    status = obj(
        {
            "conditions": conditions(description="Active tells whether it can submit workloads."),
            "pendingWorkloads": integer(),
            "reservingWorkloads": integer(),
            "admittedWorkloads": integer(),
            "flavorsReservation": _usage(borrowed=False),
            "flavorUsage": _usage(borrowed=False),
            "fairSharing": _fair_sharing_status(),
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
    return _kind(
        "LocalQueue",
        "localqueues",
        namespaced=True,
        short_names=("queue", "queues", "lq"),
        spec=spec,
        status=status,
        columns=columns,
    )


def _workload_status() -> Schema:
    assignment = obj(
        {
            "name": dns_label(default="main"),
            "flavors": map_of(dns_subdomain(), description="Flavor per resource."),
            "resourceUsage": map_of(quantity(), description="Total usage of the podSet."),
            "count": integer(minimum=0, description="Pods admitted (partial admission)."),
            "topologyAssignment": preserve_unknown(
                description="Topology domains of the pods (topology-aware scheduling)."
            ),
            "delayedTopologyRequest": string(description="Pending or Ready."),
        },
        required=("name",),
    )
    pod_set_update = obj(
        {
            "name": dns_label(),
            "labels": string_map(),
            "annotations": string_map(),
            "nodeSelector": string_map(),
            "tolerations": array(toleration(), max_items=8),
        },
        required=("name",),
    )
    check_state = obj(
        {
            "name": string(max_length=316),
            "state": string(enum=("Pending", "Ready", "Retry", "Rejected")),
            "lastTransitionTime": date_time(),
            "message": string(max_length=32768),
            "podSetUpdates": array(pod_set_update, list_type="atomic", max_items=MAX_PODSETS),
            "retryCount": integer(minimum=0),
            "requeueAfterSeconds": integer(minimum=0),
        },
        required=("name", "state", "lastTransitionTime", "message"),
    )
    return obj(
        {
            "conditions": conditions(
                description="QuotaReserved, Admitted, Evicted, Preempted, Requeued, PodsReady, "
                "Finished, Deactivated..."
            ),
            "admission": obj(
                {
                    "clusterQueue": dns_subdomain(),
                    "podSetAssignments": array(
                        assignment, map_keys=("name",), max_items=MAX_PODSETS
                    ),
                },
                required=("clusterQueue", "podSetAssignments"),
                description="Where quota is reserved, per podSet.",
            ),
            "requeueState": obj(
                {"count": integer(minimum=0), "requeueAt": date_time()},
                description="Backoff state after evictions.",
            ),
            "reclaimablePods": array(
                obj(
                    {"name": dns_label(), "count": integer(minimum=0)},
                    required=("name", "count"),
                ),
                map_keys=("name",),
                max_items=MAX_PODSETS,
                description="Pods per podSet whose quota can be released.",
            ),
            "admissionChecks": array(check_state, map_keys=("name",), max_items=8),
            "resourceRequests": array(
                obj({"name": dns_label(), "resources": map_of(quantity())}, required=("name",)),
                map_keys=("name",),
                max_items=MAX_PODSETS,
                description="Resources each pod of a podSet requests, after defaulting.",
            ),
            "clusterName": string(description="MultiKueue worker cluster running it."),
            "nominatedClusterNames": array(string(), list_type="atomic", max_items=20),
            "schedulingStats": obj(
                {
                    "evictions": array(
                        obj(
                            {
                                "reason": string(max_length=316),
                                "underlyingCause": string(max_length=316),
                                "count": integer(minimum=0),
                            },
                            required=("reason", "underlyingCause", "count"),
                        ),
                        map_keys=("reason", "underlyingCause"),
                        description="Evictions counted per reason and cause.",
                    )
                }
            ),
            "unhealthyNodes": array(
                obj({"name": string()}, required=("name",)),
                description="Failed nodes the workload's pods ran on (topology-aware scheduling).",
            ),
            # Upstream's JSON name carries this typo; clients send it spelled this way.
            "accumulatedPastExexcutionTimeSeconds": integer(
                description="Seconds spent admitted in earlier admissions."
            ),
        }
    )


def workload() -> dict[str, Any]:
    """Workload: the unit of admission a job is turned into."""
    pod_set = obj(
        {
            "name": dns_label(default="main"),
            "template": pod_template_spec(description="Pod template of this podSet."),
            "count": integer(default=1, minimum=0, description="Number of pods."),
            "minCount": integer(
                minimum=1, description="Fewest pods acceptable for partial admission."
            ),
            "topologyRequest": preserve_unknown(
                description="Topology constraints (topology-aware scheduling)."
            ),
        },
        required=("count", "template"),
    )
    spec = obj(
        {
            "podSets": array(pod_set, map_keys=("name",), min_items=1, max_items=MAX_PODSETS),
            "queueName": dns_subdomain(description="LocalQueue the workload is submitted to."),
            "priorityClassName": dns_subdomain(),
            "priority": integer(description="Priority value resolved from the class."),
            "priorityClassSource": string(
                enum=(
                    "kueue.x-k8s.io/workloadpriorityclass",
                    "scheduling.k8s.io/priorityclass",
                    "",
                ),
                default="",
            ),
            "active": boolean(default=True, description="False deactivates the workload."),
            "maximumExecutionTimeSeconds": integer(
                minimum=1, description="Evict once admitted for this long."
            ),
        },
        required=("podSets",),
    )
    columns = (
        PrinterColumn(
            "Queue", "string", ".spec.queueName", "Name of the queue this workload was submitted to"
        ),
        PrinterColumn(
            "Reserved in",
            "string",
            ".status.admission.clusterQueue",
            "Name of the ClusterQueue where the workload is reserving quota",
        ),
        PrinterColumn(
            "Admitted",
            "string",
            ".status.conditions[?(@.type=='Admitted')].status",
            "Admission status",
        ),
        PrinterColumn(
            "Finished",
            "string",
            ".status.conditions[?(@.type=='Finished')].status",
            "Workload finished",
        ),
        # kq's: the resolved priority decides the queue order, so `-o wide` shows it.
        PrinterColumn("Priority", "integer", ".spec.priority", "Resolved priority", priority=1),
        PrinterColumn(
            AGE_COLUMN.name, AGE_COLUMN.type, AGE_COLUMN.json_path, "Time this workload was created"
        ),
    )
    return _kind(
        "Workload",
        "workloads",
        namespaced=True,
        short_names=("kwl", "kueueworkload", "kueueworkloads"),
        spec=spec,
        status=_workload_status(),
        columns=columns,
    )


def workload_priority_class() -> dict[str, Any]:
    """WorkloadPriorityClass: a priority for workloads that does not touch pod priority."""
    return _kind(
        "WorkloadPriorityClass",
        "workloadpriorityclasses",
        namespaced=False,
        short_names=("wpc",),
        spec=None,
        top_level={
            "value": integer(description="Priority of workloads using this class."),
            "description": string(description="Free-form text for users."),
        },
        required=("value",),
        columns=(
            PrinterColumn(
                "Value", "integer", ".value", "Value of workloadPriorityClass's Priority"
            ),
        ),
    )


def admission_check() -> dict[str, Any]:
    """AdmissionCheck: an extra gate a workload must pass after quota reservation."""
    spec = obj(
        {
            "controllerName": string(description="Controller that owns the check (immutable)."),
            "retryDelayMinutes": integer(
                fmt="int64",
                default=15,
                description="Minutes a failed check keeps the workload suspended before retrying.",
            ),
            "parameters": obj(
                {
                    "apiGroup": dns_subdomain(),
                    "kind": string(max_length=63, pattern=r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$"),
                    "name": dns_label(),
                },
                required=("apiGroup", "kind", "name"),
                description="Object configuring the check, e.g. a ProvisioningRequestConfig.",
            ),
        },
        required=("controllerName",),
    )
    status = obj({"conditions": conditions(description="Active tells whether it is usable.")})
    return _kind(
        "AdmissionCheck",
        "admissionchecks",
        namespaced=False,
        short_names=("ac",),
        spec=spec,
        status=status,
    )


def provisioning_request_config() -> dict[str, Any]:
    """ProvisioningRequestConfig: parameters of the ProvisioningRequest admission check."""
    retry_defaults = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
    spec = obj(
        {
            "provisioningClassName": dns_subdomain(
                description="Class of the ProvisioningRequests created, e.g. "
                "queued-provisioning.gke.io."
            ),
            "parameters": map_of(
                string(max_length=255),
                max_properties=100,
                description="Parameters copied into every ProvisioningRequest.",
            ),
            "managedResources": array(
                string(),
                list_type="set",
                max_items=100,
                description="Only podSets requesting one of these resources are provisioned; "
                "empty means all.",
            ),
            "retryStrategy": obj(
                {
                    "backoffLimitCount": integer(
                        default=3, description="Retries before the check is Rejected."
                    ),
                    "backoffBaseSeconds": integer(
                        default=60, description="First retry delay, doubled on each attempt."
                    ),
                    "backoffMaxSeconds": integer(default=1800, description="Retry delay cap."),
                },
                default=retry_defaults,
            ),
            "podSetUpdates": obj(
                {
                    "nodeSelector": array(
                        obj(
                            {
                                "key": string(min_length=1, max_length=317),
                                "valueFromProvisioningClassDetail": string(
                                    min_length=1, max_length=32768
                                ),
                            },
                            required=("key", "valueFromProvisioningClassDetail"),
                        ),
                        max_items=8,
                        description="Node labels filled from provisioningClassDetails.",
                    )
                }
            ),
            "podSetMergePolicy": string(
                enum=("IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"),
                description="How podSets are merged into one ProvisioningRequest podSet.",
            ),
        },
        required=("provisioningClassName",),
    )
    return _kind(
        "ProvisioningRequestConfig",
        "provisioningrequestconfigs",
        namespaced=False,
        short_names=("prc",),
        spec=spec,
    )


def cohort() -> dict[str, Any]:
    """Cohort: a node of the quota-sharing tree with its own optional quota."""
    spec = obj(
        {
            "parentName": dns_subdomain(description="Parent cohort; unset makes this a root."),
            "resourceGroups": _resource_groups("cohort"),
            "fairSharing": _fair_sharing(),
        }
    )
    status = obj({"fairSharing": _fair_sharing_status()})
    return _kind(
        "Cohort", "cohorts", namespaced=False, short_names=("co",), spec=spec, status=status
    )


def topology() -> dict[str, Any]:
    """Topology: ordered node-label levels for topology-aware scheduling."""
    spec = obj(
        {
            "levels": array(
                obj({"nodeLabel": string(min_length=1, max_length=316)}, required=("nodeLabel",)),
                list_type="atomic",
                min_items=1,
                max_items=16,
                description="Node labels from the widest domain to the narrowest.",
            )
        },
        required=("levels",),
    )
    return _kind("Topology", "topologies", namespaced=False, short_names=("topo",), spec=spec)


def crds() -> list[dict[str, Any]]:
    """Every kueue.x-k8s.io CRD kq serves, each in v1beta1 and v1beta2."""
    v1beta1 = [
        resource_flavor(),
        cluster_queue(),
        local_queue(),
        workload(),
        workload_priority_class(),
        admission_check(),
        provisioning_request_config(),
        cohort(),
        topology(),
    ]
    return [with_v1beta2(crd) for crd in v1beta1]
