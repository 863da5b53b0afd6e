"""What the serving integrations (Deployment, StatefulSet, LeaderWorkerSet) share.

None of them gets a Workload of its own making here: their webhooks mark the pod template
(``kueue.x-k8s.io/pod-suspending-parent``) so that the ``pod`` integration gates each pod the
controller creates and queues it, as upstream's ``SuspendedByParentAnnotation``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

from kq.jobframework import FieldError, Finished, GroupVersionKind, Job, PodSet, PodSetInfo
from kq.jobframework.objects import (
    annotations_of,
    deep_copy,
    dig,
    labels,
    meta,
    name,
    namespace,
    uid,
)
from kq.plugin import ApiError, ControllerContext, Resource

SUSPENDING_PARENT_ANNOTATION = "kueue.x-k8s.io/pod-suspending-parent"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
IMMUTABLE = "field is immutable"
IS_GROUP_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/is-group-workload"
RETRY_S = 1.0
log = structlog.get_logger(__name__)


def template(job: Job) -> dict[str, Any]:
    return dict(dig(job, "spec", "template") or {})


def template_labels(job: Job) -> dict[str, str]:
    return dict(dig(job, "spec", "template", "metadata", "labels") or {})


def template_annotations(job: Job) -> dict[str, str]:
    return dict(dig(job, "spec", "template", "metadata", "annotations") or {})


def parent_of_template(job: Job) -> str:
    """The framework that marked ``job``'s pod template, or ``""``."""
    return template_annotations(job).get(SUSPENDING_PARENT_ANNOTATION, "")


def owner_labels(job: Job) -> dict[str, str]:
    """The queue and priority-class labels the pods must carry, from the owner's."""
    own = labels(job)
    return {k: own[k] for k in (QUEUE_LABEL, PRIORITY_CLASS_LABEL) if own.get(k)}


def mark_template(job: Job, framework: str, *, pod_labels: bool) -> dict[str, Any]:
    """``job`` with its pod template marked as suspended by ``framework``; ``pod_labels`` also
    copies the managed, queue and priority-class labels into it (Deployment, as upstream)."""
    out = deep_copy(job)
    meta = out.setdefault("spec", {}).setdefault("template", {}).setdefault("metadata", {})
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        SUSPENDING_PARENT_ANNOTATION: framework,
    }
    if pod_labels:
        kept = {
            k: v
            for k, v in (meta.get("labels") or {}).items()
            if k not in (QUEUE_LABEL, PRIORITY_CLASS_LABEL)
        }
        meta["labels"] = {**kept, MANAGED_LABEL: "true", **owner_labels(job)}
    return out


def ready_replicas(job: Job) -> int:
    return int(dig(job, "status", "readyReplicas") or 0)


def queue_change_errors(old: Job, new: Job) -> list[FieldError]:
    """Upstream's rule for serving owners: the queue name may change only while no replica is
    ready (its removal the generic rules refuse)."""
    old_queue = labels(old).get(QUEUE_LABEL, "")
    new_queue = labels(new).get(QUEUE_LABEL, "")
    if old_queue == new_queue or ready_replicas(old) == 0:
        return []
    return [FieldError(f"metadata.labels[{QUEUE_LABEL}]", "Invalid", IMMUTABLE, new_queue)]


def priority_change_errors(old: Job, new: Job) -> list[FieldError]:
    """A priority class may be added only while no replica is ready (its removal the generic
    rules refuse)."""
    old_class = labels(old).get(PRIORITY_CLASS_LABEL, "")
    new_class = labels(new).get(PRIORITY_CLASS_LABEL, "")
    if old_class or not new_class or ready_replicas(old) == 0:
        return []
    path = f"metadata.labels[{PRIORITY_CLASS_LABEL}]"
    message = "WorkloadPriorityClass cannot be added to a non-suspended workload"
    return [FieldError(path, "Invalid", message, new_class)]


class PodOwner:
    """What a serving owner whose pods are the jobs (Deployment, LeaderWorkerSet) answers: it
    has no pod sets of its own, is never reconciled (``skip``), never finishes, and only its
    queue and priority labels are checked on update."""

    def pod_sets(self, job: Job) -> list[PodSet]:
        return []

    def run_with_pod_set_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        return deep_copy(job)

    def restore_pod_sets_info(self, job: Job, infos: Sequence[PodSetInfo]) -> dict[str, Any]:
        return deep_copy(job)

    def finished(self, job: Job) -> Finished | None:
        return None

    def pods_ready(self, job: Job) -> bool:
        return False

    def skip(self, job: Job) -> bool:
        return True

    def validate_on_create(self, job: Job) -> list[FieldError]:
        return []

    def validate_on_update(self, old: Job, new: Job) -> list[FieldError]:
        return queue_change_errors(old, new) + priority_change_errors(old, new)


async def run_passes(
    ctx: ControllerContext, watches: Sequence[Resource], one_pass: Callable[[], Awaitable[bool]]
) -> None:
    """``one_pass`` after every change of ``watches``, and again ``RETRY_S`` after one that
    failed (it returns whether every write went through)."""
    wake = asyncio.Event()
    for resource in watches:
        ctx.on_change(resource, wake.set)
    while True:
        wake.clear()
        failed = not await one_pass()
        try:
            async with asyncio.timeout(RETRY_S if failed else None):
                await wake.wait()
        except TimeoutError:
            pass


async def patch_or_delete(
    ctx: ControllerContext, resource: Resource, obj: Job, patch: dict[str, Any] | None
) -> bool:
    """``obj`` merge-patched, or deleted without a patch; whether that went through (an object
    already gone counts as done)."""
    try:
        if patch is None:
            await ctx.client.delete(resource, name(obj), namespace(obj))
        else:
            await ctx.client.merge_patch(resource, name(obj), patch, namespace=namespace(obj))
    except ApiError as error:
        if error.not_found:
            return True
        log.warning(f"{resource.kind} not updated", name=name(obj), error=str(error))
        return False
    return True


def owned_by(workload: Job, owner: Job) -> bool:
    return any(o.get("uid") == uid(owner) for o in meta(workload).get("ownerReferences") or ())


def adoption_patch(workload: Job, owner: Job, gvk: GroupVersionKind) -> dict[str, Any] | None:
    """The merge patch that adds ``owner`` to the owners of its pod group's ``workload`` (as
    upstream's serving owners own their groups' Workloads, so they outlive the pods), or
    ``None`` when it is one already or the Workload is not a pod group's; ``resourceVersion``
    guards the list."""
    if owned_by(workload, owner):
        return None
    if annotations_of(workload).get(IS_GROUP_WORKLOAD_ANNOTATION) != "true":
        return None
    ref = {"apiVersion": gvk.api_version, "kind": gvk.kind, "name": name(owner), "uid": uid(owner)}
    owners = [*(meta(workload).get("ownerReferences") or ()), ref]
    rv = meta(workload).get("resourceVersion")
    return {"metadata": {"ownerReferences": owners, "resourceVersion": rv}}
