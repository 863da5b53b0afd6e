"""Plain Pods and pod groups (framework ``pod``), as Kueue's ``pkg/controller/jobs/pod``.

The webhook gives a pod kq manages the scheduling gate ``kueue.x-k8s.io/admission``, the
label and finalizer ``kueue.x-k8s.io/managed`` and its role hash. A pod alone gets a Workload
with one PodSet ``main``; pods sharing ``kueue.x-k8s.io/pod-group-name`` one Workload named
after the group (``pod_group``). Admission merges the flavor's node selector and tolerations
into each gated pod and removes the gate. A pod cannot be suspended, so stopping one marks it
``TerminationTarget`` (reason: why) and deletes it. The finalizer keeps a pod until kq has
counted it: it is removed once the Workload finishes or is gone.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import (
    FieldError,
    Finished,
    GroupVersionKind,
    Job,
    JobStep,
    PodSet,
    PodSetInfo,
    PodSetInfoError,
    ReclaimablePod,
)
from kq.jobframework.objects import (
    Obj,
    annotations_of,
    controller_owner,
    deep_copy,
    dig,
    find_condition,
    is_deleting,
    labels,
    meta,
    name,
    uid,
)
from kq.jobframework.podset import check_info_count, merge_into_template
from kq.jobframework.workload import max_execution_time_seconds
from kq_plugins.jobs import pod_group as group
from kq_plugins.jobs import pod_upkeep as upkeep
from kq_plugins.jobs.leaderworkerset import pod_defaults as lws_pod_defaults
from kq_plugins.jobs.pod_validation import validate_create, validate_update

ADMISSION_GATE = "kueue.x-k8s.io/admission"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
POD_FINALIZER = MANAGED_LABEL
TERMINATION_TARGET = "TerminationTarget"
SUSPENDING_PARENT = "kueue.x-k8s.io/pod-suspending-parent"
STOP_WORKLOAD_DELETED = "WorkloadDeleted"


def is_gated(pod: Job) -> bool:
    return any(g.get("name") == ADMISSION_GATE for g in dig(pod, "spec", "schedulingGates") or ())


def _suspended(pod: Job) -> bool:
    return group.is_terminated(pod) or is_gated(pod)


class Pod:
    NAME: ClassVar[str] = "pod"
    GVK: ClassVar[GroupVersionKind] = GroupVersionKind("", "v1", "Pod")

    def is_suspended(self, job: Job) -> bool:
        return any(_suspended(p) for p in group.members(job))

    def suspend(self, job: Job) -> dict[str, Any]:
        """What the webhook does to a pod kq manages on create: gate, label, finalizer, role."""
        job = lws_pod_defaults(job)  # a LeaderWorkerSet's pod joins its group's pod group
        out = deep_copy(job)
        metadata = out.setdefault("metadata", {})
        metadata["labels"] = {**(metadata.get("labels") or {}), MANAGED_LABEL: "true"}
        finalizers = list(metadata.get("finalizers") or [])
        # A serving owner's pods get none (upstream): their owner replaces them.
        by_parent = SUSPENDING_PARENT in (metadata.get("annotations") or {})
        if POD_FINALIZER not in finalizers and not by_parent:
            metadata["finalizers"] = [*finalizers, POD_FINALIZER]
        spec = out.setdefault("spec", {})
        if not is_gated(out):
            spec["schedulingGates"] = [
                *(spec.get("schedulingGates") or []),
                {"name": ADMISSION_GATE},
            ]
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            group.ROLE_HASH_ANNOTATION: group.role_hash(job),
        }
        return out

    def pod_sets(self, job: Job) -> list[PodSet]:
        if group.is_group(job):
            return group.pod_sets(job)
        return [PodSet("main", 1, {"spec": deep_copy(job.get("spec") or {})})]

    def run_with_pod_set_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        """Every gated pod gets its role's info merged in and its gate removed."""
        if not group.is_group(job):
            check_info_count(infos, 1)
            return _ungated(job, infos[0])
        by_role = {info.name: info for info in infos}
        pods = []
        for pod in group.members(job):
            if not is_gated(pod):
                pods.append(deep_copy(pod))
                continue
            role = group.role_hash(pod)
            if role not in by_role:
                raise PodSetInfoError(
                    f"invalid podset infos: podSetInfo with the name '{role}' is not found"
                )
            pods.append(_ungated(pod, by_role[role]))
        return {**deep_copy(job), group.MEMBERS: pods}

    def restore_pod_sets_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        return deep_copy(job)  # a started pod cannot be changed back, only stopped

    def finished(self, job: Job) -> Finished | None:
        if group.is_group(job):
            message = group.finished_message(job)
            return Finished(True, message) if message is not None else None
        if not group.is_terminated(job):
            return None
        return Finished(group.phase(job) == "Succeeded", str(dig(job, "status", "message") or ""))

    def is_active(self, job: Job) -> bool:
        """Only a group's pods count (upstream): a single pod's quota is released at once."""
        if not group.is_group(job):
            return False
        return any(group.phase(p) == "Running" for p in group.members(job))

    def pods_ready(self, job: Job) -> bool:
        pods = group.members(job)
        if group.is_group(job):
            try:
                if len(pods) < group.total_count(pods[0]):
                    return False
            except ValueError:
                return False
        return all(_ready(p) for p in pods)

    # -- JobWithSkip, JobWithReclaimablePods, JobWithCustomValidation --------------------------

    def skip(self, job: Job) -> bool:
        """Pods the webhook did not mark are not kq's, whatever their labels say; a
        StatefulSet's wait until ``statefulset_pods`` makes them members of its group."""
        if annotations_of(job).get(SUSPENDING_PARENT) == "statefulset" and not group.group_name(
            job
        ):
            return True
        return labels(job).get(MANAGED_LABEL) != "true"

    def reclaimable_pods(self, job: Job) -> list[ReclaimablePod]:
        """A group's succeeded pods free their quota (not for a serving group)."""
        if not group.is_group(job) or annotations_of(job).get(group.SERVING_ANNOTATION) == "true":
            return []
        counts: dict[str, int] = {}
        for pod in group.members(job):
            if group.phase(pod) == "Succeeded":
                role = group.role_hash(pod)
                counts[role] = counts.get(role, 0) + 1
        return [ReclaimablePod(role, count) for role, count in counts.items()]

    def validate_on_create(self, job: Job) -> list[FieldError]:
        return validate_create(job)

    def validate_on_update(self, old: Job, new: Job) -> list[FieldError]:
        return validate_update(old, new)

    # -- ComposableJob --------------------------------------------------------------------------

    def group_name(self, obj: Job) -> str:
        return group.group_name(obj)

    def compose(self, objs: Sequence[Job]) -> dict[str, Any]:
        first = objs[0]
        if len(objs) == 1 and not group.group_name(first):
            return deep_copy(first)
        out = deep_copy(first)
        # The group goes away with its last pod, not with its first one.
        out["metadata"].pop("deletionTimestamp", None)
        out[group.MEMBERS] = [deep_copy(o) for o in objs]
        return out

    def members(self, job: Job) -> list[Job]:
        return group.members(job)

    def owns(self, job: Job, workload: Obj) -> bool:
        if group.is_group(job):
            return (
                name(workload) == group.group_name(job)
                and annotations_of(workload).get(group.IS_GROUP_WORKLOAD_ANNOTATION) == "true"
            )
        return (controller_owner(workload) or {}).get("uid") == uid(job)

    def matches(self, job: Job, workload: Obj) -> bool | None:
        if not group.is_group(job):
            return None
        if dig(workload, "spec", "maximumExecutionTimeSeconds") != max_execution_time_seconds(job):
            return False
        return group.matches(job, workload)

    def compose_workload(self, job: Job, workload: Obj) -> dict[str, Any]:
        out = deep_copy(workload)
        if not group.is_group(job):
            return out
        metadata = out["metadata"]
        metadata["name"] = group.group_name(job)
        metadata["ownerReferences"] = group.owner_references(group.members(job))
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            group.IS_GROUP_WORKLOAD_ANNOTATION: "true",
        }
        return out

    def compose_error(self, job: Job) -> str | None:
        return group.compose_error(job) if group.is_group(job) else None

    def stop_members(self, job: Job, reason: str, message: str) -> list[JobStep]:
        """``TerminationTarget`` then delete, for each pod not already stopped or going."""
        steps = []
        for pod in group.members(job):
            if is_deleting(pod) or (reason != STOP_WORKLOAD_DELETED and _suspended(pod)):
                continue
            kept = [
                c
                for c in dig(pod, "status", "conditions") or ()
                if c.get("type") != TERMINATION_TARGET
            ]
            condition = {
                "type": TERMINATION_TARGET,
                "status": "True",
                "reason": reason,
                "message": message,
                # A stamp of now, as upstream's condition carries; the only clock read here.
                "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            patch = {"status": {"conditions": [*kept, condition]}}
            steps += [
                JobStep(status_patch=patch, member=name(pod)),
                JobStep(member=name(pod), delete=True),
            ]
        return steps

    def upkeep(self, job: Job, workload: Obj | None) -> list[JobStep]:
        return upkeep.steps(job, workload) if group.is_group(job) else []

    def workload_conditions(self, job: Job, workload: Obj) -> list[dict[str, Any]]:
        return upkeep.waiting_condition(job, workload) if group.is_group(job) else []

    def finalize(self, job: Job) -> dict[str, Any]:
        pods = [_without_finalizer(p) for p in group.members(job)]
        if not group.is_group(job):
            return pods[0]
        return {**deep_copy(job), group.MEMBERS: pods}


def _ungated(pod: Job, info: PodSetInfo) -> dict[str, Any]:
    """``pod`` with ``info`` merged in and kq's gates lifted (the topology gate only when the
    admission does not place the pod itself)."""
    out = merge_into_template(pod, info)
    keep_topology = any(g.get("name") == TOPOLOGY_GATE for g in info.scheduling_gates or ())
    gates = [
        g
        for g in dig(out, "spec", "schedulingGates") or ()
        if g.get("name") != ADMISSION_GATE and (keep_topology or g.get("name") != TOPOLOGY_GATE)
    ]
    if gates:
        out["spec"]["schedulingGates"] = gates
    else:
        out["spec"].pop("schedulingGates", None)
    return out


def _without_finalizer(pod: Job) -> dict[str, Any]:
    out = copy.deepcopy(dict(pod))
    finalizers = meta(out).get("finalizers") or []
    if POD_FINALIZER in finalizers:
        out["metadata"]["finalizers"] = [f for f in finalizers if f != POD_FINALIZER]
    return out


def _ready(pod: Job) -> bool:
    return (find_condition(pod, "Ready") or {}).get("status") == "True"


@hookimpl
def kq_register_job_integrations(register: Register) -> None:
    register(Pod)
