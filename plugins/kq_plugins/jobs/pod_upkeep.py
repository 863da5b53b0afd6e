"""A group's pods kept in line with its Workload, as upstream's ``FindMatchingWorkloads``:
pods beyond a role's count are deleted (``ExcessPodDeleted``), failed pods that replacements
supersede lose the finalizer, and the Workload says ``WaitingForReplacementPods`` while pods
are missing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kq.jobframework import Job, JobStep
from kq.jobframework.objects import Obj, dig, find_condition, is_deleting, meta, name
from kq_plugins.jobs import pod_group as group

POD_FINALIZER = "kueue.x-k8s.io/managed"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
WAITING = "WaitingForReplacementPods"


@dataclass
class Plan:
    """What becomes of a group's pods against its Workload's pod sets."""

    excess: list[Job] = field(default_factory=list)
    replaced: list[Job] = field(default_factory=list)
    absent: int = 0


def plan(job: Job, workload: Obj | None) -> Plan:
    """Per role: the newest active pods beyond its count are excess, the oldest inactive ones
    beyond what the count leaves room for are replaced; missing pods are absent."""
    pods = group.members(job)
    active = [p for p in pods if group.runnable_or_succeeded(p)]
    inactive = [p for p in pods if not group.runnable_or_succeeded(p)]
    out = Plan()
    if workload is None:
        try:
            total = group.total_count(pods[0])
        except ValueError:
            return out
        out.excess = _by_keep(active)[total:]
        return out
    for pod_set in dig(workload, "spec", "podSets") or ():
        role, count = str(pod_set.get("name", "")), int(pod_set.get("count", 1))
        mine = [p for p in active if group.role_hash(p) == role]
        gone = [p for p in inactive if group.role_hash(p) == role]
        out.absent += _absent(pods[0], count, len(mine))
        out.excess += _by_keep(mine)[count:]
        releasable = min(len(gone), len(gone) + len(mine) - count)
        if releasable > 0:
            out.replaced += _by_keep(gone)[len(gone) - releasable :]
    return out


def _absent(first: Job, count: int, active: int) -> int:
    """Pods the role misses; with fast admission only an empty role misses any (one), as the
    rest of the group may simply not have been created yet."""
    if group.fast_admission(first):
        return 1 if count > 0 and active == 0 else 0
    return max(0, count - active)


def steps(job: Job, workload: Obj | None) -> list[JobStep]:
    """The writes: released pods lose the finalizer, excess pods are deleted (with upstream's
    event), and the job goes on without them."""
    found = plan(job, workload)
    released = {name(p) for p in [*found.excess, *found.replaced] if _finalized(p)}
    excess = {name(p) for p in found.excess}
    members = [_without_finalizer(p) if name(p) in released else p for p in group.members(job)]
    out = [JobStep(job={**job, group.MEMBERS: members})] if released else []
    for pod in found.excess:
        if not is_deleting(pod):
            event = ("ExcessPodDeleted", "Excess pod deleted")
            out.append(JobStep(member=name(pod), delete=True, event=event))
    if excess:
        kept = [p for p in members if name(p) not in excess]
        out.append(JobStep(job={**job, group.MEMBERS: kept}))
    return out


def waiting_condition(job: Job, workload: Obj) -> list[dict[str, Any]]:
    """``WaitingForReplacementPods``: True while pods are missing (with the eviction's reason
    and message when evicted, else ``PodsFailed``), False (``PodsReady``) once none are."""
    absent = plan(job, workload).absent
    current = find_condition(workload, WAITING)
    if current is None and not absent:
        return []
    if not absent:
        return [_condition("False", "PodsReady", "No pods need replacement")]
    evicted = find_condition(workload, "Evicted")
    if evicted is not None and evicted.get("status") == "True":
        return [_condition("True", str(evicted.get("reason", "")), str(evicted.get("message", "")))]
    if current is not None and current.get("status") == "True":
        return [dict(current)]
    return [_condition("True", "PodsFailed", "Some Failed pods need replacement")]


def _condition(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": WAITING, "status": status, "reason": reason, "message": message}


def _by_keep(pods: Sequence[Job]) -> list[Job]:
    """Pods most worth keeping first: with the finalizer, ungated, then the oldest."""
    return sorted(
        pods,
        key=lambda p: (
            not _finalized(p),
            any(g.get("name") == ADMISSION_GATE for g in dig(p, "spec", "schedulingGates") or ()),
            str(meta(p).get("creationTimestamp", "")),
            name(p),
        ),
    )


def _finalized(pod: Job) -> bool:
    return POD_FINALIZER in (meta(pod).get("finalizers") or ())


def _without_finalizer(pod: Job) -> dict[str, Any]:
    out = dict(pod)
    out["metadata"] = {
        **meta(pod),
        "finalizers": [f for f in meta(pod).get("finalizers") or () if f != POD_FINALIZER],
    }
    return out
