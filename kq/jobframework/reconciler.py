"""The generic job reconciler as a pure decision: (job, its Workloads, cluster facts) → actions.

Follows Kueue's ``JobReconciler.ReconcileGenericJob`` step by step; the I/O loop applies the
actions in order and calls ``decide`` again on the next change of the job or its Workloads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kq.api.priority import PRIORITY_CLASS_LABEL, WORKLOAD_PRIORITY_CLASS_SOURCE
from kq.jobframework import composable, lifecycle
from kq.jobframework.actions import (
    Action,
    CreateWorkload,
    DeleteWorkload,
    Event,
    FinishWorkload,
    ReleaseQuota,
    RemoveWorkloadFinalizer,
    SetReclaimablePods,
    SetWorkloadCondition,
    UpdateWorkloadSpec,
    update_job,
)
from kq.jobframework.constants import (
    FINISHED_FAILED,
    FINISHED_SUCCEEDED,
    REASON_CREATED_WORKLOAD,
    REASON_DELETED_WORKLOAD,
    REASON_DEPRECATED_QUEUE_ANNOTATION,
    REASON_ERR_WORKLOAD_COMPOSE,
    REASON_FINISHED_WORKLOAD,
    REASON_SUSPENDED,
    REASON_UPDATED_WORKLOAD,
    REQUEUE_ON_EVICTION,
    RESOURCE_IN_USE_FINALIZER,
)
from kq.jobframework.interface import (
    ComposableJob,
    GenericJob,
    Job,
    JobWithReclaimablePods,
    JobWithSkip,
)
from kq.jobframework.matching import equivalent
from kq.jobframework.objects import (
    Obj,
    dig,
    find_condition,
    is_deleting,
    key,
    labels,
    meta,
    name,
    namespace,
)
from kq.jobframework.priority import Priorities, PriorityNotFound, resolve_priority
from kq.jobframework.queue_name import is_managed, queue_name
from kq.jobframework.workload import (
    build_workload,
    eviction,
    has_quota_reservation,
    is_admitted,
    is_finished,
    workload_spec,
)


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    """What the decision reads besides the job and its Workloads."""

    flavors: Mapping[str, Obj] = field(default_factory=dict)
    """ResourceFlavor objects by name."""
    priorities: Priorities = field(default_factory=lambda: Priorities({}, {}))
    manage_jobs_without_queue_name: bool = False
    namespace_managed: bool = True
    """Whether the job's namespace matches ``managedJobsNamespaceSelector``."""
    wait_for_pods_ready: bool = False
    ancestor_admitted: bool | None = None
    """For a job owned by a kq-managed job: whether the ancestor's Workload is admitted."""


def decide(
    integration: GenericJob, job: Job, workloads: Sequence[Obj], facts: ClusterFacts
) -> list[Action]:
    """The actions for one reconcile of ``job``; ``workloads`` are those it controls."""
    if isinstance(integration, JobWithSkip) and integration.skip(job):
        return []
    if is_deleting(job):
        return [*job_deleted(workloads), *composable.finalize(integration, job)]
    # Upstream respects managedJobsNamespaceSelector for every job, queue name or not
    # (ManagedJobsNamespaceSelectorAlwaysRespected, GA and locked on since Kueue v0.19).
    if not facts.namespace_managed or not is_managed(
        job, manage_jobs_without_queue_name=facts.manage_jobs_without_queue_name
    ):
        return []
    if facts.ancestor_admitted is not None:
        return _child_job(integration, job, facts.ancestor_admitted)

    ensured = _ensure_one_workload(integration, job, workloads, facts)
    actions, job, workload = ensured.actions, ensured.job, ensured.workload
    if ensured.done:
        return actions
    if isinstance(integration, ComposableJob):
        kept, job, done = composable.upkeep(integration, job, workload)
        actions += kept
        if done:
            return actions
    if workload is not None and is_finished(workload):
        # FinishedWorkload went out with the write that declared the Workload finished; upstream
        # repeats it here and relies on client-go's event correlator to fold the two.
        actions += composable.finalize(integration, job)
        if RESOURCE_IN_USE_FINALIZER in (meta(workload).get("finalizers") or ()):
            actions.append(_remove_finalizer(workload))
        return actions
    if workload is not None and is_deleting(workload):
        stop_actions, job = lifecycle.stop(
            integration,
            job,
            workload,
            lifecycle.MSG_WORKLOAD_DELETED,
            lifecycle.STOP_WORKLOAD_DELETED,
        )
        finalized = composable.finalize(integration, job)
        return [*actions, *stop_actions, *finalized, _remove_finalizer(workload)]
    finished = integration.finished(job)
    if finished is not None:
        if workload is not None:
            reason = FINISHED_SUCCEEDED if finished.success else FINISHED_FAILED
            actions += [
                FinishWorkload(namespace(workload), name(workload), reason, finished.message),
                _finished_event(workload),
            ]
        return actions
    if workload is None:
        return actions + _create_workload(integration, job, facts, workloads)
    return actions + _follow_workload(integration, job, workload, facts)


def job_deleted(workloads: Sequence[Obj]) -> list[Action]:
    """The job is gone or going: let garbage collection delete its Workloads."""
    return [
        _remove_finalizer(wl)
        for wl in workloads
        if RESOURCE_IN_USE_FINALIZER in (meta(wl).get("finalizers") or ())
    ]


def _child_job(integration: GenericJob, job: Job, ancestor_admitted: bool) -> list[Action]:
    """A job whose ancestor kq manages gets no Workload; it only waits for the ancestor."""
    if ancestor_admitted or integration.is_suspended(job) or integration.finished(job) is not None:
        return []
    return [
        *update_job(job, integration.suspend(job)),
        Event(REASON_SUSPENDED, "Kueue managed child job suspended"),
    ]


@dataclass(frozen=True, slots=True)
class _Ensured:
    """The outcome of keeping one Workload for the job."""

    actions: list[Action]
    job: Job  # as the actions leave it (stopped if no Workload matched)
    workload: Obj | None  # the Workload the rest of the reconcile follows
    done: bool  # the reconcile ends with these actions


def _delete_workloads(workloads: Sequence[Obj]) -> list[Action]:
    actions: list[Action] = []
    for wl in workloads:
        # Finalizer first, as upstream's workload.Delete: a Workload deleted with it stays
        # Terminating, holding its quota, and nothing would ever remove it.
        if RESOURCE_IN_USE_FINALIZER in (meta(wl).get("finalizers") or ()):
            actions.append(_remove_finalizer(wl))
        if not is_deleting(wl):
            actions += [
                DeleteWorkload(namespace(wl), name(wl)),
                Event(REASON_DELETED_WORKLOAD, f"Deleted not matching Workload: {key(wl)}"),
            ]
    return actions


def _ensure_one_workload(
    integration: GenericJob, job: Job, workloads: Sequence[Obj], facts: ClusterFacts
) -> _Ensured:
    """Keep the one Workload that matches the job; delete, update or stop for the rest."""
    owned = [wl for wl in workloads if composable.owns(integration, job, wl)]
    match = next((wl for wl in owned if equivalent(integration, job, wl, facts.flavors)), None)
    to_delete = [wl for wl in owned if wl is not match]
    actions: list[Action] = []
    to_update = None
    suspended = integration.is_suspended(job)
    if match is None and to_delete and suspended and not has_quota_reservation(to_delete[0]):
        to_update, to_delete = to_delete[0], to_delete[1:]
    if match is None and not suspended and integration.finished(job) is None:
        previous = to_delete[0] if len(to_delete) == 1 else None
        if previous is None:
            message = lifecycle.MSG_MISSING_WORKLOAD
        else:
            message = lifecycle.MSG_NO_MATCHING_WORKLOAD
        actions, job = lifecycle.stop(
            integration, job, previous, message, lifecycle.STOP_NO_MATCHING_WORKLOAD
        )
    if to_delete:
        # The deletions trigger the next reconcile, which sees the remaining Workload.
        return _Ensured([*actions, *_delete_workloads(to_delete)], job, None, True)
    if to_update is not None:
        update = _spec_for(integration, job, facts)
        if isinstance(update, Event):
            return _Ensured([*actions, update], job, None, True)
        actions += [
            UpdateWorkloadSpec(namespace(to_update), name(to_update), update),
            Event(
                REASON_UPDATED_WORKLOAD,
                f"Updated not matching Workload for suspended job: {key(to_update)}",
            ),
        ]
        return _Ensured(actions, job, {**to_update, "spec": update}, False)
    if match is not None:
        synced, blocked = _sync_priority(integration, job, match, facts)
        for action in synced:
            if isinstance(action, UpdateWorkloadSpec):
                # Later steps (a queue-name sync) must build on the updated spec.
                match = {**match, "spec": action.spec}
        return _Ensured([*actions, *synced], job, match, blocked)
    return _Ensured(actions, job, match, False)


def _spec_for(integration: GenericJob, job: Job, facts: ClusterFacts) -> dict[str, object] | Event:
    pod_sets = integration.pod_sets(job)
    priority = resolve_priority(integration, job, pod_sets, facts.priorities)
    if isinstance(priority, PriorityNotFound):
        return Event(priority.reason, priority.message, "Warning")
    return workload_spec(pod_sets, queue_name(job).name, priority, job)


def _sync_priority(
    integration: GenericJob, job: Job, workload: Obj, facts: ClusterFacts
) -> tuple[list[Action], bool]:
    """The Workload follows the job's ``kueue.x-k8s.io/priority-class`` label.

    As upstream's ``UpdateWorkloadPriority``: a Workload whose priority came from a pod
    PriorityClass never follows the label, nor does one that holds quota without any class
    (the API server refuses to add a class then). A class that does not exist blocks the
    rest of the reconcile with a Warning, until it is created. The second value says so.
    """
    spec = workload.get("spec") or {}
    source = str(spec.get("priorityClassSource") or "")
    if (not source and has_quota_reservation(workload)) or (
        source and source != WORKLOAD_PRIORITY_CLASS_SOURCE
    ):
        return [], False
    current = str(spec.get("priorityClassName") or "") if source else ""
    wanted = labels(job).get(PRIORITY_CLASS_LABEL, "")
    if current == wanted:
        # Same class: only its value may have changed. Upstream's WorkloadPriorityClass
        # controller propagates that; kq does it here for the Workloads of jobs.
        value = facts.priorities.workload_classes.get(wanted)
        if not wanted or value is None or value == spec.get("priority"):
            return [], False
        return [
            UpdateWorkloadSpec(namespace(workload), name(workload), {**spec, "priority": value})
        ], False
    priority = resolve_priority(integration, job, integration.pod_sets(job), facts.priorities)
    if isinstance(priority, PriorityNotFound):
        return [Event(priority.reason, priority.message, "Warning")], True
    updated = {
        k: v for k, v in spec.items() if k not in ("priorityClassName", "priorityClassSource")
    }
    updated["priority"] = priority.value
    if priority.class_name:
        updated.update(priorityClassName=priority.class_name, priorityClassSource=priority.source)
    if updated == spec:
        return [], False
    return [
        UpdateWorkloadSpec(namespace(workload), name(workload), updated),
        Event(REASON_UPDATED_WORKLOAD, f"Updated workload priority class: {key(workload)}"),
    ], False


def _create_workload(
    integration: GenericJob, job: Job, facts: ClusterFacts, others: Sequence[Obj]
) -> list[Action]:
    """The job's Workload, unless the job cannot have one yet; ``others``: Workloads of the
    namespace that may hold its name (a pod group's)."""
    if integration.is_active(job):
        return []  # wait until the pods of a previous run are gone
    if isinstance(integration, ComposableJob):
        error = integration.compose_error(job)
        if error is not None:
            return [Event(REASON_ERR_WORKLOAD_COMPOSE, error, "Warning")]
    pod_sets = integration.pod_sets(job)
    priority = resolve_priority(integration, job, pod_sets, facts.priorities)
    if isinstance(priority, PriorityNotFound):
        return [Event(priority.reason, priority.message, "Warning")]
    queue = queue_name(job)
    workload = build_workload(integration, job, pod_sets, queue.name, priority)
    if isinstance(integration, ComposableJob):
        workload = integration.compose_workload(job, workload)
        if any(name(other) == name(workload) for other in others):
            return [composable.name_conflict(name(workload))]
    actions: list[Action] = [
        CreateWorkload(workload),
        Event(REASON_CREATED_WORKLOAD, f"Created Workload: {key(workload)}"),
    ]
    if queue.warning is not None:
        actions.append(Event(REASON_DEPRECATED_QUEUE_ANNOTATION, queue.warning, "Warning"))
    return actions


def _follow_workload(
    integration: GenericJob, job: Job, workload: Obj, facts: ClusterFacts
) -> list[Action]:
    """Steps 4-8 of upstream: reclaimable pods, PodsReady, eviction, start, stop."""
    wl_ns, wl_name = namespace(workload), name(workload)
    if isinstance(integration, JobWithReclaimablePods):
        pods = integration.reclaimable_pods(job)
        current = [
            (p.get("name"), p.get("count"))
            for p in dig(workload, "status", "reclaimablePods") or ()
        ]
        if [(p.name, p.count) for p in pods] != current and (pods or current):
            return [SetReclaimablePods(wl_ns, wl_name, pods)]
    if facts.wait_for_pods_ready:
        condition = pods_ready_condition(integration, job, workload)
        old = find_condition(workload, "PodsReady") or {}
        if (old.get("status"), old.get("reason")) != (condition["status"], condition["reason"]):
            return [SetWorkloadCondition(wl_ns, wl_name, condition)]
    evicted = eviction(workload)
    if evicted is not None:
        reason, message = str(evicted.get("reason", "")), str(evicted.get("message", ""))
        stop_reason = f"{lifecycle.STOP_WORKLOAD_EVICTED}DueTo{reason}"
        actions, stopped = lifecycle.stop(integration, job, workload, message, stop_reason)
        if has_quota_reservation(workload) and not integration.is_active(stopped):
            single_pod = composable.owned_by_single_pod(workload)
            requeued = reason in REQUEUE_ON_EVICTION and not single_pod
            actions.append(ReleaseQuota(wl_ns, wl_name, requeued, reason, message))
        return actions
    if integration.is_suspended(job):
        if is_admitted(workload):
            return lifecycle.start(integration, job, workload, facts.flavors)
        return _sync_queue_name(job, workload)
    if not is_admitted(workload):
        return lifecycle.stop(integration, job, workload, lifecycle.MSG_NOT_ADMITTED)[0]
    return []


def _sync_queue_name(job: Job, workload: Obj) -> list[Action]:
    """A suspended job may move to another LocalQueue while its Workload holds no quota."""
    wanted = queue_name(job).name
    spec = workload.get("spec") or {}
    if (spec.get("queueName") or "") == wanted or has_quota_reservation(workload):
        return []
    updated = {k: v for k, v in spec.items() if k != "queueName"}
    if wanted:
        updated["queueName"] = wanted
    return [UpdateWorkloadSpec(namespace(workload), name(workload), updated)]


NOT_READY_MESSAGE = "Not all pods are ready or succeeded"
RECOVERY_MESSAGE = "At least one pod has failed, waiting for recovery"
READY_MESSAGE = "All pods reached readiness and the workload is running"


def pods_ready_condition(integration: GenericJob, job: Job, workload: Obj) -> dict[str, str]:
    """The ``PodsReady`` condition waitForPodsReady keeps (Kueue's reasons and messages)."""
    old = find_condition(workload, "PodsReady")
    old_reason = old.get("reason") if old is not None else None
    recovering = old_reason in ("WaitForRecovery", "Recovered")
    if not is_admitted(workload):
        status, reason, message = "False", "WaitForStart", NOT_READY_MESSAGE
    elif integration.pods_ready(job):
        status, reason = "True", "Recovered" if recovering else "Started"
        message = READY_MESSAGE
    elif old is not None and (old.get("status") == "True" or old_reason == "WaitForRecovery"):
        status, reason, message = "False", "WaitForRecovery", RECOVERY_MESSAGE
    else:
        status, reason, message = "False", "WaitForStart", NOT_READY_MESSAGE
    return {"type": "PodsReady", "status": status, "reason": reason, "message": message}


def _finished_event(workload: Obj) -> Event:
    return Event(REASON_FINISHED_WORKLOAD, f"Workload '{key(workload)}' is declared finished")


def _remove_finalizer(workload: Obj) -> RemoveWorkloadFinalizer:
    return RemoveWorkloadFinalizer(namespace(workload), name(workload))
