"""LeaderWorkerSets (framework ``leaderworkerset.x-k8s.io/leaderworkerset``), after Kueue's
``pkg/controller/jobs/leaderworkerset``.

One Workload per group, ``leaderworkerset-<set>-<group index>-<hash>``, with pod sets
``leader`` (1) and ``worker`` (size - 1), or ``main`` (size) without a leader template. The
webhook marks both pod templates (``pod-suspending-parent``, ``pod-group-serving``, the queue and
priority labels); each pod is then created gated and ``pod_defaults`` makes it a member of its
group's pod group (group name, ``pod-group-total-count`` = size, role ``leader``/``worker``), so
the ``pod`` integration admits and ungates a group as one and stops it as one. kq's group
Workload is composed from the pods (owned by them, as any pod group's) where upstream builds it
from the set; its name hashes the set's name and group, not its uid. ``leaderworkerset_groups``
makes the set one of its owners, so it outlives a preempted group's pods as upstream's, and
deletes the Workloads of groups that a scale-down or the set's deletion removed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework import GroupVersionKind, Job
from kq.jobframework.naming import workload_name
from kq.jobframework.objects import annotations_of, deep_copy, dig, labels
from kq_plugins.jobs import serving

FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
GVK = GroupVersionKind("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet")
SERVING_ANNOTATION = "kueue.x-k8s.io/pod-group-serving"
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
ROLE_ANNOTATION = "kueue.x-k8s.io/role-hash"
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
LEADER_NAME_ANNOTATION = "leaderworkerset.sigs.k8s.io/leader-name"
TEMPLATES = ("leaderTemplate", "workerTemplate")


def group_workload_name(set_name: str, index: str) -> str:
    return workload_name(f"{set_name}-{index}", "", GVK)


def has_leader_template(lws: Job) -> bool:
    return dig(lws, "spec", "leaderWorkerTemplate", "leaderTemplate") is not None


def pod_defaults(pod: Job) -> dict[str, Any]:
    """A LeaderWorkerSet pod made a member of its group's pod group (upstream's pod reconciler
    does this once the pod exists; kq on create, so the group forms as its pods arrive)."""
    out = deep_copy(pod)
    own = labels(out)
    if annotations_of(out).get(serving.SUSPENDING_PARENT_ANNOTATION) != FRAMEWORK:
        return out
    if SET_NAME_LABEL not in own or GROUP_INDEX_LABEL not in own:
        return out
    metadata = out["metadata"]
    name = group_workload_name(own[SET_NAME_LABEL], own[GROUP_INDEX_LABEL])
    metadata["labels"] = {**own, GROUP_NAME_LABEL: name}
    notes = annotations_of(out)
    role = "worker" if LEADER_NAME_ANNOTATION in notes else "leader"
    if notes.get(_SINGLE_TEMPLATE) == "true":
        role = "main"
    metadata["annotations"] = {
        **notes,
        TOTAL_COUNT_ANNOTATION: notes.get(SIZE_ANNOTATION, "1"),
        ROLE_ANNOTATION: role,
    }
    return out


_SINGLE_TEMPLATE = "kq.dev/lws-single-template"
"""On the worker template of a set without a leader template: its pods' role is ``main``."""


class LeaderWorkerSet(serving.PodOwner):
    NAME: ClassVar[str] = FRAMEWORK
    GVK: ClassVar[GroupVersionKind] = GVK
    IMPLICITLY_ENABLES: ClassVar[tuple[str, ...]] = ("pod",)

    def is_suspended(self, job: Job) -> bool:
        template = dig(job, "spec", "leaderWorkerTemplate", "workerTemplate") or {}
        parent = dig(template, "metadata", "annotations", serving.SUSPENDING_PARENT_ANNOTATION)
        return bool(parent == FRAMEWORK)

    def suspend(self, job: Job) -> dict[str, Any]:
        out = deep_copy(job)
        spec = out.setdefault("spec", {}).setdefault("leaderWorkerTemplate", {})
        for key in TEMPLATES:
            if key not in spec:
                continue
            marked = serving.mark_template({**job, "spec": {"template": spec[key]}}, FRAMEWORK,
                                           pod_labels=True)  # fmt: skip
            notes = marked["spec"]["template"]["metadata"]["annotations"]
            notes[SERVING_ANNOTATION] = "true"
            if key == "workerTemplate" and not has_leader_template(job):
                notes[_SINGLE_TEMPLATE] = "true"
            spec[key] = marked["spec"]["template"]
        return out

    def is_active(self, job: Job) -> bool:
        return False


@hookimpl
def kq_register_job_integrations(register: Register) -> None:
    register(LeaderWorkerSet)
