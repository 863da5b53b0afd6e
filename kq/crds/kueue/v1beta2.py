"""kueue.x-k8s.io/v1beta2: each kind's v1beta1 schema with the fields Kueue v0.19 renamed,
restructured, removed or added (``kq.crds.conversion.kinds`` lists them), served beside v1beta1.

Deriving v1beta2 from v1beta1 keeps the two versions' shared fields identical by construction.
v1beta2 is the storage version, as in Kueue v0.19; v1beta1 carries Kueue's deprecation warning.
kq speaks v1beta2 on the wire and converts to its v1beta1-shaped model itself
(``kq.runtime.storage_version``), so its own requests need no conversion webhook.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kq.crds.schema import Schema, array, date_time, dns_subdomain, obj, string

V1BETA1 = "v1beta1"
V1BETA2 = "v1beta2"
STORAGE_VERSION = V1BETA2
DEPRECATION_WARNING = "This version is deprecated. Use v1beta2 instead."
MAX_PREEMPTION_GATES = 8


def _props(schema: Schema, *path: str) -> dict[str, Schema]:
    node = schema
    for key in path:
        node = node["properties"][key]
        if node.get("type") == "array":
            node = node["items"]
    properties: dict[str, Schema] = node["properties"]
    return properties


def _rename(properties: dict[str, Schema], old: str, new: str) -> None:
    # Rebuilt in order so the new name takes the old one's place in the rendered YAML.
    renamed = {new if key == old else key: value for key, value in properties.items()}
    properties.clear()
    properties.update(renamed)


def _fair_sharing_status_without_admission(root: Schema) -> None:
    _props(root, "status", "fairSharing").pop("admissionFairSharingStatus")


def _cluster_queue(root: Schema, version: dict[str, Any]) -> None:
    spec = _props(root, "spec")
    _rename(spec, "cohort", "cohortName")
    del spec["admissionChecks"]
    fungibility = spec["flavorFungibility"]["properties"]
    fungibility["whenCanBorrow"]["enum"] = ["MayStopSearch", "TryNextFlavor"]
    fungibility["whenCanPreempt"]["enum"] = ["MayStopSearch", "TryNextFlavor"]
    spec["concurrentAdmissionPolicy"] = _concurrent_admission_policy()
    _fair_sharing_status_without_admission(root)
    for column in version["additionalPrinterColumns"]:
        if column["jsonPath"] == ".spec.cohort":
            column["jsonPath"] = ".spec.cohortName"


def _concurrent_admission_policy() -> Schema:
    migration = obj(
        {
            "mode": string(
                enum=("TryPreferredFlavors", "RetainFirstAdmission"),
                description="Whether an admitted workload may still move to a preferred flavor.",
            ),
            "constraints": obj(
                {
                    "lastAcceptableFlavorName": dns_subdomain(
                        description="Least preferred flavor a workload may move to."
                    )
                }
            ),
        },
        required=("mode",),
    )
    return obj(
        {"migration": migration},
        required=("migration",),
        description="Admission pursuing several flavors at once (kq accepts and keeps it, and "
        "does not act on it).",
    )


def _cohort(root: Schema, version: dict[str, Any]) -> None:
    _fair_sharing_status_without_admission(root)


def _local_queue(root: Schema, version: dict[str, Any]) -> None:
    _rename(_props(root, "status"), "flavorUsage", "flavorsUsage")


def _workload(root: Schema, version: dict[str, Any]) -> None:
    spec = _props(root, "spec")
    _rename(spec, "priorityClassName", "priorityClassRef")
    spec["priorityClassRef"] = obj(
        {
            "group": string(enum=("kueue.x-k8s.io", "scheduling.k8s.io")),
            "kind": string(enum=("WorkloadPriorityClass", "PriorityClass")),
            "name": dns_subdomain(),
        },
        required=("group", "kind", "name"),
        description="The WorkloadPriorityClass or PriorityClass the priority comes from.",
    )
    del spec["priorityClassSource"]
    spec["preemptionGates"] = array(
        obj({"name": string(min_length=1, max_length=63)}, required=("name",)),
        map_keys=("name",),
        max_items=MAX_PREEMPTION_GATES,
        description="Gates that must all be open before the workload may preempt.",
    )
    status = _props(root, "status")
    _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
    gate_state = obj(
        {
            "name": string(min_length=1, max_length=63),
            "position": string(enum=("Closed", "Open")),
            "lastTransitionTime": date_time(),
        },
        required=("name",),
    )
    status["preemptionGates"] = array(
        gate_state, map_keys=("name",), max_items=MAX_PREEMPTION_GATES
    )


def _admission_check(root: Schema, version: dict[str, Any]) -> None:
    del _props(root, "spec")["retryDelayMinutes"]


_EDITS: dict[str, Callable[[Schema, dict[str, Any]], None]] = {
    "ClusterQueue": _cluster_queue,
    "Cohort": _cohort,
    "LocalQueue": _local_queue,
    "Workload": _workload,
    "AdmissionCheck": _admission_check,
}


def with_v1beta2(crd: dict[str, Any]) -> dict[str, Any]:
    """``crd`` (serving v1beta1 only; not mutated) serving v1beta2 too."""
    out = copy.deepcopy(crd)
    (v1beta1,) = out["spec"]["versions"]
    v1beta2 = copy.deepcopy(v1beta1)
    v1beta2["name"] = V1BETA2
    edit = _EDITS.get(out["spec"]["names"]["kind"])
    if edit is not None:
        edit(v1beta2["schema"]["openAPIV3Schema"], v1beta2)
    v1beta1["deprecated"] = True
    v1beta1["deprecationWarning"] = DEPRECATION_WARNING
    for version in (v1beta1, v1beta2):
        version["storage"] = version["name"] == STORAGE_VERSION
    out["spec"]["versions"] = [v1beta1, v1beta2]
    return out
