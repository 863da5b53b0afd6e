"""Workload and WorkloadPriorityClass."""

from __future__ import annotations

from typing import Any

from kq.crds.core import conditions, pod_template_spec, toleration
from kq.crds.kueue.common import kueue_crd
from kq.crds.schema import (
    AGE_COLUMN,
    PrinterColumn,
    Schema,
    array,
    boolean,
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

MAX_PODSETS = 18


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
    return kueue_crd(
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
    return kueue_crd(
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
