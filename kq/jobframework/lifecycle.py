"""Starting a job on admission and stopping it (suspend + restore), as lists of actions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kq.jobframework.actions import (
    Action,
    DeleteMember,
    Event,
    FinishWorkload,
    PatchJobStatus,
    update_job,
)
from kq.jobframework.admission import admitted_infos, original_infos
from kq.jobframework.constants import FINISHED_FAILED_TO_START, REASON_STARTED, REASON_STOPPED
from kq.jobframework.interface import ComposableJob, GenericJob, Job, JobWithCustomStop
from kq.jobframework.objects import Obj, dig, name, namespace
from kq.jobframework.podset import PodSetInfo, PodSetInfoError

MSG_NOT_ADMITTED = "Not admitted by cluster queue"
MSG_WORKLOAD_DELETED = "Workload is deleted"
MSG_NO_MATCHING_WORKLOAD = (
    "No matching Workload; restoring pod templates according to existent Workload"
)
MSG_MISSING_WORKLOAD = "Missing Workload; unable to restore pod templates"
_EVENT_MESSAGE_MAX = 1024

# Why a job is stopped (upstream's StopReason): a composable job's members carry it.
STOP_WORKLOAD_DELETED = "WorkloadDeleted"
STOP_WORKLOAD_EVICTED = "WorkloadEvicted"
STOP_NO_MATCHING_WORKLOAD = "NoMatchingWorkload"
STOP_NOT_ADMITTED = "NotAdmitted"


def start(
    integration: GenericJob, job: Job, workload: Obj, flavors: Mapping[str, Obj]
) -> list[Action]:
    """Unsuspend with the admission merged in; a conflict finishes the Workload as failed.

    Raises ``FlavorNotFound`` when an assigned flavor is unknown: the caller retries later.
    """
    try:
        infos = admitted_infos(workload, flavors)
        started = integration.run_with_pod_set_info(job, infos)
    except PodSetInfoError as error:
        return [
            FinishWorkload(
                namespace(workload), name(workload), FINISHED_FAILED_TO_START, str(error)
            )
        ]
    cluster_queue = dig(workload, "status", "admission", "clusterQueue")
    message = f"Admitted by clusterQueue {cluster_queue}"
    if isinstance(integration, ComposableJob):
        # One Started event per member that this start changed (ungated), as upstream.
        before = {name(m): m for m in integration.members(job)}
        events: list[Action] = [
            Event(REASON_STARTED, message, member=name(m))
            for m in integration.members(started)
            if before.get(name(m)) != m
        ]
        return [*update_job(job, started), *events]
    return [*update_job(job, started), Event(REASON_STARTED, message)]


def stop(
    integration: GenericJob,
    job: Job,
    workload: Obj | None,
    message: str,
    reason: str = STOP_NOT_ADMITTED,
) -> tuple[list[Action], Job]:
    """Suspend and restore the Workload's original templates; returns the job as written."""
    infos: Sequence[PodSetInfo] = original_infos(workload) if workload is not None else []
    event = Event(REASON_STOPPED, message[:_EVENT_MESSAGE_MAX])
    if isinstance(integration, ComposableJob):
        return _stop_members(integration, job, reason, message), job
    if isinstance(integration, JobWithCustomStop):
        was_running = not integration.is_suspended(job)
        actions: list[Action] = []
        current = job
        for step in integration.stop(job, infos):
            if step.job is not None:
                actions += update_job(current, step.job)
                current = step.job
            if step.status_patch is not None:
                actions.append(PatchJobStatus(step.status_patch))
        return ([*actions, event] if was_running else actions), current
    if integration.is_suspended(job):
        return [], job
    stopped = integration.suspend(job)
    if infos:
        stopped = integration.restore_pod_sets_info(stopped, infos)
    return [*update_job(job, stopped), event], stopped


def _stop_members(integration: ComposableJob, job: Job, reason: str, message: str) -> list[Action]:
    """Each stopped member gets its status patch, its deletion and its own Stopped event."""
    actions: list[Action] = []
    for step in integration.stop_members(job, reason, message):
        if step.status_patch is not None:
            actions.append(PatchJobStatus(step.status_patch, member=step.member))
        if step.delete:
            actions += [
                DeleteMember(step.member),
                Event(REASON_STOPPED, message[:_EVENT_MESSAGE_MAX], member=step.member),
            ]
    return actions
