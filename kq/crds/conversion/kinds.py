"""Field-by-field conversion of each kueue.x-k8s.io kind between v1beta1 and v1beta2.

These are the plain mappings (renames, restructurings, dropped fields) of Kueue v0.19's
conversion functions; each returns a new object that shares what it leaves unchanged, and never
mutates its argument. What a mapping drops is kept by ``kq.crds.conversion.lossless``, not here.

| kind | v1beta1 | v1beta2 |
|---|---|---|
| ClusterQueue | ``spec.cohort`` | ``spec.cohortName`` |
| ClusterQueue | ``spec.admissionChecks: [name]`` | ``spec.admissionChecksStrategy`` rules |
| ClusterQueue | ``flavorFungibility`` ``Borrow`` / ``Preempt`` | ``MayStopSearch`` |
| ClusterQueue | ``status.pendingWorkloadsStatus`` | (none) |
| ClusterQueue | (none) | ``spec.concurrentAdmissionPolicy`` |
| ClusterQueue, Cohort | ``status.fairSharing.admissionFairSharingStatus`` | (none) |
| LocalQueue | ``status.flavorUsage`` | ``status.flavorsUsage`` |
| LocalQueue | ``status.flavors`` | (none) |
| Workload | ``spec.priorityClassSource`` + ``spec.priorityClassName`` | ``spec.priorityClassRef`` |
| Workload | ``status.accumulatedPastExexcutionTimeSeconds`` | ``...ExecutionTimeSeconds`` |
| Workload | topology assignment ``domains`` | ``slices`` |
| Workload | (none) | ``spec.preemptionGates``, ``status.preemptionGates``, a podSet's |
| | | ``topologyRequest.podsetSliceRequiredTopologyConstraints`` |
| AdmissionCheck | ``spec.retryDelayMinutes`` | (none) |

The other kinds (ResourceFlavor, WorkloadPriorityClass, ProvisioningRequestConfig, Topology)
have the same fields in both versions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kq.crds.conversion import topology

Obj = dict[str, Any]
Mapping = Callable[[Obj], Obj]

WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PC_SOURCE = "scheduling.k8s.io/priorityclass"
# v1beta1's priorityClassSource and v1beta2's priorityClassRef (group, kind) name the same thing.
_REF_OF_SOURCE = {
    WPC_SOURCE: ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    POD_PC_SOURCE: ("scheduling.k8s.io", "PriorityClass"),
}
_SOURCE_OF_REF = {ref: source for source, ref in _REF_OF_SOURCE.items()}
# Deprecated v1beta1 names of MayStopSearch, which v1beta2 no longer accepts.
_OLD_FUNGIBILITY = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


def _each(items: Any) -> list[dict[str, Any]]:
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _own(parent: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    """``parent[key]``, if a dict, replaced by a shallow copy the caller may edit; ``parent``
    is one the caller owns. The mappings copy only what they change: every object here is a
    value nobody edits in place (the API server's store, a decoded answer)."""
    if parent is None or not isinstance(child := parent.get(key), dict):
        return None
    owned = dict(child)
    parent[key] = owned
    return owned


def _rename(parent: dict[str, Any] | None, old: str, new: str) -> None:
    if parent is not None and old in parent:
        parent[new] = parent.pop(old)


def _drop(parent: dict[str, Any] | None, *keys: str) -> None:
    for key in keys:
        if parent is not None:
            parent.pop(key, None)


def _edit_where(
    parent: dict[str, Any],
    key: str,
    wanted: Callable[[dict[str, Any]], bool],
    edit: Callable[[dict[str, Any]], None],
) -> None:
    """``edit`` applied to a copy of each dict of the list ``parent[key]`` that ``wanted``
    picks; the list is copied only when one is."""
    items = parent.get(key)
    if not isinstance(items, list) or not any(wanted(item) for item in _each(items)):
        return
    parent[key] = [_edited(item, edit) if isinstance(item, dict) and wanted(item) else item
                   for item in items]  # fmt: skip


def _edited(item: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copied = dict(item)
    edit(copied)
    return copied


# --- ClusterQueue and Cohort ---------------------------------------------------------------


def cluster_queue_up(obj: Obj) -> Obj:
    out = dict(obj)
    spec = _own(out, "spec")
    _rename(spec, "cohort", "cohortName")
    if spec is not None:
        checks = spec.pop("admissionChecks", None)
        # As upstream: a v1beta1 list of checks becomes rules that apply to every flavor.
        if isinstance(checks, list) and checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    fungibility = _own(spec, "flavorFungibility")
    for field, old in _OLD_FUNGIBILITY.items():
        if fungibility is not None and fungibility.get(field) == old:
            fungibility[field] = "MayStopSearch"
    status = _own(out, "status")
    _drop(status, "pendingWorkloadsStatus")
    _drop(_own(status, "fairSharing"), "admissionFairSharingStatus")
    return out


def cluster_queue_down(obj: Obj) -> Obj:
    out = dict(obj)
    spec = _own(out, "spec")
    _rename(spec, "cohortName", "cohort")
    _drop(spec, "concurrentAdmissionPolicy")
    return out


def cohort_up(obj: Obj) -> Obj:
    out = dict(obj)
    _drop(_own(_own(out, "status"), "fairSharing"), "admissionFairSharingStatus")
    return out


# --- LocalQueue ------------------------------------------------------------------------------


def local_queue_up(obj: Obj) -> Obj:
    out = dict(obj)
    status = _own(out, "status")
    _rename(status, "flavorUsage", "flavorsUsage")
    _drop(status, "flavors")
    return out


def local_queue_down(obj: Obj) -> Obj:
    out = dict(obj)
    _rename(_own(out, "status"), "flavorsUsage", "flavorUsage")
    return out


# --- Workload --------------------------------------------------------------------------------


def workload_up(obj: Obj) -> Obj:
    out = dict(obj)
    spec = _own(out, "spec")
    if spec is not None:
        name = spec.pop("priorityClassName", None)
        ref = _REF_OF_SOURCE.get(spec.pop("priorityClassSource", None) or "")
        if ref is not None and name:
            spec["priorityClassRef"] = {"group": ref[0], "kind": ref[1], "name": name}
    status = _own(out, "status")
    _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
    _map_topology_assignments(status, topology.pack)
    return out


def workload_down(obj: Obj) -> Obj:
    out = dict(obj)
    spec = _own(out, "spec")
    if spec is not None:
        ref = spec.pop("priorityClassRef", None)
        source = _SOURCE_OF_REF.get(_group_kind(ref))
        if source is not None and isinstance(ref, dict):
            spec["priorityClassName"] = ref.get("name", "")
        # v1beta1's schema default, which the API server would add on the way out anyway.
        spec["priorityClassSource"] = source or ""
        spec.pop("preemptionGates", None)
        _edit_where(spec, "podSets", _has_slice_constraints, _drop_slice_constraints)
    status = _own(out, "status")
    _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
    _drop(status, "preemptionGates")
    _map_topology_assignments(status, topology.unpack)
    return out


_SLICE_CONSTRAINTS = "podsetSliceRequiredTopologyConstraints"


def _has_slice_constraints(pod_set: dict[str, Any]) -> bool:
    request = pod_set.get("topologyRequest")
    return isinstance(request, dict) and _SLICE_CONSTRAINTS in request


def _drop_slice_constraints(pod_set: dict[str, Any]) -> None:
    _drop(_own(pod_set, "topologyRequest"), _SLICE_CONSTRAINTS)


def _group_kind(ref: Any) -> tuple[str, str]:
    if not isinstance(ref, dict):
        return ("", "")
    return (str(ref.get("group", "")), str(ref.get("kind", "")))


def _map_topology_assignments(
    status: dict[str, Any] | None, convert: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    def mapped(assignment: dict[str, Any]) -> None:
        assignment["topologyAssignment"] = convert(assignment["topologyAssignment"])

    admission = _own(status, "admission")
    if admission is not None:
        _edit_where(admission, "podSetAssignments", _placed, mapped)


def _placed(assignment: dict[str, Any]) -> bool:
    return isinstance(assignment.get("topologyAssignment"), dict)


# --- AdmissionCheck --------------------------------------------------------------------------

RETRY_DELAY_MINUTES_DEFAULT = 15


def admission_check_up(obj: Obj) -> Obj:
    out = dict(obj)
    _drop(_own(out, "spec"), "retryDelayMinutes")
    return out


def admission_check_down(obj: Obj) -> Obj:
    # v1beta1's schema default, which the API server would add on the way out anyway.
    return admission_check_defaulted(dict(obj))


def same(obj: Obj) -> Obj:
    return dict(obj)


# --- v1beta1 schema defaults -----------------------------------------------------------------


def _with_spec_default(obj: Obj, field: str, value: Any) -> Obj:
    spec = obj.get("spec")
    if not isinstance(spec, dict) or field in spec:
        return obj
    return {**obj, "spec": {**spec, field: value}}


def workload_defaulted(obj: Obj) -> Obj:
    return _with_spec_default(obj, "priorityClassSource", "")


def admission_check_defaulted(obj: Obj) -> Obj:
    return _with_spec_default(obj, "retryDelayMinutes", RETRY_DELAY_MINUTES_DEFAULT)


# kind -> the v1beta1 object (not mutated) with the defaults its v1beta2 -> v1beta1 mapping
# fills in: the API server defaults a v1beta1 request before converting it, so a field left
# out that way is no field to keep.
V1BETA1_DEFAULTS: dict[str, Mapping] = {
    "Workload": workload_defaulted,
    "AdmissionCheck": admission_check_defaulted,
}


# kind -> (v1beta1 -> v1beta2, v1beta2 -> v1beta1)
MAPPINGS: dict[str, tuple[Mapping, Mapping]] = {
    "ClusterQueue": (cluster_queue_up, cluster_queue_down),
    "Cohort": (cohort_up, same),
    "LocalQueue": (local_queue_up, local_queue_down),
    "Workload": (workload_up, workload_down),
    "AdmissionCheck": (admission_check_up, admission_check_down),
    "ResourceFlavor": (same, same),
    "WorkloadPriorityClass": (same, same),
    "ProvisioningRequestConfig": (same, same),
    "Topology": (same, same),
}
