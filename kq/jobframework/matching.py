"""Does an existing Workload still describe the job? If not, the reconciler replaces it.

Same rules as Kueue's ``EquivalentToWorkload``: the controller owner is the job (name and UID),
``maximumExecutionTimeSeconds`` is the same, and the PodSets agree on count, minCount,
tolerations (ignored once admitted, since admission adds some), init containers and
containers. A Workload holding quota is compared with the templates as they run, i.e. with its
admission merged in; a suspended job may also match the Workload's original templates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kq.jobframework.admission import FlavorNotFound, admitted_infos
from kq.jobframework.interface import ComposableJob, GenericJob, Job
from kq.jobframework.objects import Obj, controller_owner, dig, name, uid
from kq.jobframework.podset import PodSetInfoError, merge_into_template
from kq.jobframework.workload import (
    has_quota_reservation,
    is_admitted,
    max_execution_time_seconds,
)


def equivalent(
    integration: GenericJob, job: Job, workload: Obj, flavors: Mapping[str, Obj]
) -> bool:
    if isinstance(integration, ComposableJob):
        matched = integration.matches(job, workload)
        if matched is not None:
            return matched
    owner = controller_owner(workload)
    if owner is None or owner.get("name") != name(job) or owner.get("uid") != uid(job):
        return False
    if dig(workload, "spec", "maximumExecutionTimeSeconds") != max_execution_time_seconds(job):
        return False
    wanted = [ps.to_dict() for ps in integration.pod_sets(job)]
    ignore_tolerations = is_admitted(workload)
    original = list(dig(workload, "spec", "podSets") or ())
    running = _running_pod_sets(workload, flavors)
    if running is not None:
        if _same_pod_sets(wanted, running, ignore_tolerations):
            return True
        # Suspended but still admitted: the templates are the original ones again.
        return integration.is_suspended(job) and _same_pod_sets(
            wanted, original, ignore_tolerations
        )
    return _same_pod_sets(wanted, original, ignore_tolerations)


def _running_pod_sets(workload: Obj, flavors: Mapping[str, Obj]) -> list[Obj] | None:
    if not has_quota_reservation(workload):
        return None
    try:
        infos = admitted_infos(workload, flavors)
    except (FlavorNotFound, PodSetInfoError):
        return None
    pod_sets = list(dig(workload, "spec", "podSets") or ())
    by_name = {info.name: info for info in infos}
    running: list[Obj] = []
    for pod_set in pod_sets:
        info = by_name.get(str(pod_set.get("name")))
        if info is None:
            return None
        try:
            template = merge_into_template(pod_set.get("template") or {}, info)
        except PodSetInfoError:
            return None
        count = info.count if pod_set.get("minCount") is not None else pod_set.get("count")
        running.append({**pod_set, "template": template, "count": count})
    return running


def _same_pod_sets(a: Sequence[Obj], b: Sequence[Obj], ignore_tolerations: bool) -> bool:
    return len(a) == len(b) and all(
        _same_pod_set(x, y, ignore_tolerations) for x, y in zip(a, b, strict=True)
    )


def _same_pod_set(a: Obj, b: Obj, ignore_tolerations: bool) -> bool:
    if a.get("count", 1) != b.get("count", 1) or a.get("minCount") != b.get("minCount"):
        return False
    fields = ["initContainers", "containers"]
    if not ignore_tolerations:
        fields.append("tolerations")
    # Kubernetes' semantic equality treats an empty list like a missing one.
    return all(_spec(a, f) == _spec(b, f) for f in fields)


def _spec(pod_set: Obj, field: str) -> Any:
    return dig(pod_set, "template", "spec", field) or []
