"""The reconciler's steps that exist only for composable jobs (pod groups), as upstream's
``ComposableJob`` branches of ``ReconcileGenericJob``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kq.jobframework.actions import (
    Action,
    DeleteMember,
    Event,
    SetWorkloadCondition,
    SetWorkloadOwners,
    update_job,
)
from kq.jobframework.interface import ComposableJob, GenericJob, Job
from kq.jobframework.objects import Obj, controller_owner, find_condition, meta, name, namespace
from kq.jobframework.objects import uid as uid_of


def finalize(integration: GenericJob, job: Job) -> list[Action]:
    """A composable job's members lose their finalizers (upstream's ``JobWithFinalize``)."""
    if not isinstance(integration, ComposableJob):
        return []
    return update_job(job, integration.finalize(job))


def owns(integration: GenericJob, job: Job, workload: Obj) -> bool:
    if isinstance(integration, ComposableJob):
        return integration.owns(job, workload)
    return (controller_owner(workload) or {}).get("uid") == uid_of(job)


def owned_by_single_pod(workload: Obj) -> bool:
    """Upstream's SkipReassignmentForPodOwnedWorkloads (on by default): a Workload owned by one
    pod dies with it, so its eviction is not requeued."""
    owners = list(meta(workload).get("ownerReferences") or ())
    return [(o.get("apiVersion"), o.get("kind")) for o in owners] == [("v1", "Pod")]


def upkeep(
    integration: ComposableJob, job: Job, workload: Obj | None
) -> tuple[list[Action], Job, bool]:
    """Members kept in line with their Workload, then its own conditions.

    Returns the actions, the job as they leave it, and whether the reconcile ends here (a
    condition changed: the Workload's update brings the next reconcile, as upstream returns
    after patching ``CustomWorkloadConditions``).
    """
    actions = _new_owners(integration, job, workload) if workload is not None else []
    for step in integration.upkeep(job, workload):
        if step.job is not None:
            actions += update_job(job, step.job)
            job = step.job
        if step.delete:
            actions.append(DeleteMember(step.member))
        if step.event is not None:
            actions.append(Event(*step.event, member=step.member))
    if workload is None:
        return actions, job, False
    changed = [
        SetWorkloadCondition(namespace(workload), name(workload), condition)
        for condition in integration.workload_conditions(job, workload)
        if not _carries(workload, condition)
    ]
    return [*actions, *changed], job, bool(changed)


def name_conflict(workload_name: str) -> Event:
    """Upstream's refusal of a group whose name a Workload of someone else's already has."""
    return Event(
        "WorkloadNameConflict",
        f'A Workload named "{workload_name}" already exists but is not a pod group workload; '
        "this pod group cannot be admitted",
        "Warning",
    )


def _new_owners(integration: ComposableJob, job: Job, workload: Obj) -> list[Action]:
    """Members the Workload does not name as owners yet become owners, so it outlives the
    members it was made for (upstream's ``EnsureWorkloadOwnedByAllMembers``)."""
    current = list(meta(workload).get("ownerReferences") or ())
    known = {str(o.get("uid")) for o in current}
    wanted = meta(integration.compose_workload(job, workload)).get("ownerReferences") or ()
    added = [o for o in wanted if str(o.get("uid")) not in known]
    if not added:
        return []
    wl_ns, wl_name = namespace(workload), name(workload)
    message = f"Added {len(added)} owner reference(s)"
    return [
        SetWorkloadOwners(wl_ns, wl_name, [*current, *added]),
        Event("OwnerReferencesAdded", message, workload=wl_name),
    ]


def _carries(workload: Obj, condition: Mapping[str, Any]) -> bool:
    current = find_condition(workload, str(condition["type"])) or {}
    return all(current.get(k) == condition.get(k) for k in ("status", "reason", "message"))
