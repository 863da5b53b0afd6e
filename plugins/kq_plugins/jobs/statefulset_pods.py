"""The pods and the Workload of each StatefulSet kq queues, as upstream's StatefulSet pod
reconciler and StatefulSet reconciler keep them.

Each live pod of the set (created gated: its template is marked ``pod-suspending-parent:
statefulset``) becomes a member of the set's pod group: the group name, ``replicas`` as its
size, fast admission, ``pod-group-serving`` and the role ``main``, and the set's queue label.
The ``pod`` integration does the rest. The group's Workload gets the set among its owners, so a
preemption that deletes the pods does not take it; a set scaled to 0 has it deleted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework.objects import annotations_of, controller_owner, labels, meta, name, namespace
from kq.plugin import WORKLOADS, ControllerContext, Resource
from kq_plugins.jobs import pod_group as group
from kq_plugins.jobs import serving
from kq_plugins.jobs.statefulset import FRAMEWORK, GVK, group_workload_name, replicas

PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)
MAIN = "main"

Obj = dict[str, Any]
Write = tuple[Resource, Obj, Obj | None]


def member_patch(pod: Obj, sts: Obj) -> Obj | None:
    """The merge patch that makes ``pod`` a member of ``sts``'s group (or brings its queue
    label in line), ``None`` when it is one."""
    queue = labels(sts).get(serving.QUEUE_LABEL, "")
    own = labels(pod)
    if group.group_name(pod) == group_workload_name(sts):
        if queue and own.get(serving.QUEUE_LABEL) != queue:
            return {"metadata": {"labels": {serving.QUEUE_LABEL: queue}}}
        return None
    return {
        "metadata": {
            "labels": {group.GROUP_NAME_LABEL: group_workload_name(sts),
                       serving.MANAGED_LABEL: "true", **serving.owner_labels(sts)},
            "annotations": {
                group.GROUP_TOTAL_COUNT_ANNOTATION: str(replicas(sts)),
                group.FAST_ADMISSION_ANNOTATION: "true",
                group.SERVING_ANNOTATION: "true",
                group.ROLE_HASH_ANNOTATION: MAIN,
            },
        }
    }  # fmt: skip


def pod_writes(pods: list[Obj], sets: Mapping[str, Obj]) -> Iterator[Write]:
    for pod in pods:
        if annotations_of(pod).get(serving.SUSPENDING_PARENT_ANNOTATION) != FRAMEWORK:
            continue
        owner = controller_owner(pod) or {}
        if owner.get("kind") != GVK.kind or meta(pod).get("deletionTimestamp"):
            continue
        if group.is_terminated(pod):
            continue
        sts = sets.get(f"{namespace(pod)}/{owner.get('name', '')}")
        if sts is None or meta(sts).get("deletionTimestamp") or replicas(sts) == 0:
            continue
        patch = member_patch(pod, sts)
        if patch is not None:
            yield PODS, pod, patch


def workload_writes(sets: Mapping[str, Obj], workloads: Mapping[str, Obj]) -> Iterator[Write]:
    """The set adopts its group's Workload; scaled to 0, it has it deleted."""
    for sts in sets.values():
        workload = workloads.get(f"{namespace(sts)}/{group_workload_name(sts)}")
        if workload is None or meta(sts).get("deletionTimestamp"):
            continue
        if serving.parent_of_template(sts) != FRAMEWORK:
            continue
        if replicas(sts) == 0:
            if not meta(workload).get("deletionTimestamp"):
                yield WORKLOADS, workload, None
            continue
        patch = serving.adoption_patch(workload, sts, GVK)
        if patch is not None:
            yield WORKLOADS, workload, patch


class StatefulSetPods:
    NAME: ClassVar[str] = "statefulset-pods"
    WATCHES: ClassVar[tuple[Resource, ...]] = (PODS, STATEFULSETS, WORKLOADS)

    async def run(self, ctx: ControllerContext) -> None:
        await serving.run_passes(ctx, self.WATCHES, lambda: self._pass(ctx))

    async def _pass(self, ctx: ControllerContext) -> bool:
        sets = {f"{namespace(s)}/{name(s)}": s for s in ctx.store(STATEFULSETS).values()}
        workloads = {f"{namespace(w)}/{name(w)}": w for w in ctx.store(WORKLOADS).values()}
        writes = [*pod_writes(ctx.store(PODS).values(), sets), *workload_writes(sets, workloads)]
        ok = True
        for resource, obj, patch in writes:
            ok &= await serving.patch_or_delete(ctx, resource, obj, patch)
        return ok


@hookimpl
def kq_register_controllers(register: Register) -> None:
    register(StatefulSetPods)
