"""The Workloads of LeaderWorkerSet groups kept as upstream's LeaderWorkerSet reconciler keeps
them: owned by their set as well as their pods, and deleted once their group is gone.

Upstream builds each group's Workload from the set and makes the set its owner, so a preempted
group's Workload outlives its pods (the set makes them again) and keeps its ``Evicted`` and
``Preempted`` conditions while it waits for quota. kq composes the Workload from the group's
pods (``leaderworkerset``); this controller adds the set to its owners once it exists, and
deletes the Workloads of the groups a scale-down or the set's deletion removed: those the set
owns beyond its replicas, and those whose terminating pods' set is gone or smaller (before the
set adopted them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework.objects import annotations_of, dig, labels, meta, name, namespace
from kq.plugin import WORKLOADS, ControllerContext, Resource
from kq_plugins.jobs.leaderworkerset import (
    FRAMEWORK,
    GROUP_INDEX_LABEL,
    GROUP_NAME_LABEL,
    GVK,
    SET_NAME_LABEL,
    group_workload_name,
)
from kq_plugins.jobs.serving import (
    SUSPENDING_PARENT_ANNOTATION,
    adoption_patch,
    owned_by,
    patch_or_delete,
    run_passes,
)

PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
LEADERWORKERSETS = Resource(
    "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", namespaced=True
)
Obj = dict[str, Any]


def replicas(lws: Obj) -> int:
    """The groups whose Workloads are kept: ``spec.replicas``, or ``status.replicas`` while a
    rolling update surges above it (upstream's ``filterWorkloads``)."""
    wanted = int((lws.get("spec") or {}).get("replicas", 1))
    status = lws.get("status") or {}
    if int(status.get("replicas") or 0) > wanted and _surging(lws, wanted):
        return int(status["replicas"])
    return wanted


def _surging(lws: Obj, wanted: int) -> bool:
    """A rolling update with a positive ``maxSurge`` that has not updated every group yet; a
    percentage counts as 0, as upstream's ``IntValue``."""
    rolling = dig(lws, "spec", "rolloutStrategy", "rollingUpdateConfiguration")
    if not rolling:
        return False
    raw = rolling.get("maxSurge")
    surge = raw if isinstance(raw, int) else int(raw) if str(raw).isdigit() else 0
    return surge > 0 and int(dig(lws, "status", "updatedReplicas") or 0) < wanted


def removed_groups(pods: list[Obj], sets: Mapping[str, Obj]) -> set[tuple[str, str]]:
    """``(namespace, Workload)`` of the groups whose terminating pods' set is gone or smaller."""
    out = set()
    for pod in pods:
        own = labels(pod)
        if annotations_of(pod).get(SUSPENDING_PARENT_ANNOTATION) != FRAMEWORK:
            continue
        if not meta(pod).get("deletionTimestamp") or GROUP_NAME_LABEL not in own:
            continue
        lws = sets.get(f"{namespace(pod)}/{own.get(SET_NAME_LABEL, '')}")
        if (
            lws is None
            or meta(lws).get("deletionTimestamp")
            or int(own.get(GROUP_INDEX_LABEL, "0")) >= replicas(lws)
        ):
            out.add((namespace(pod), own[GROUP_NAME_LABEL]))
    return out


def adoptions(sets: Mapping[str, Obj], workloads: Mapping[str, Obj]) -> Iterator[tuple[Obj, Obj]]:
    """``(workload, merge patch)`` adding a live set to the owners of each of its groups'
    Workloads that does not name it yet."""
    for lws in sets.values():
        if meta(lws).get("deletionTimestamp"):
            continue
        for index in range(replicas(lws)):
            key = f"{namespace(lws)}/{group_workload_name(name(lws), str(index))}"
            workload = workloads.get(key)
            patch = adoption_patch(workload, lws, GVK) if workload is not None else None
            if workload is not None and patch is not None:
                yield workload, patch


def surplus(sets: Mapping[str, Obj], workloads: Mapping[str, Obj]) -> set[tuple[str, str]]:
    """``(namespace, Workload)`` a set owns beyond its replicas (upstream's ``filterWorkloads``)."""
    out = set()
    for lws in sets.values():
        wanted = {group_workload_name(name(lws), str(i)) for i in range(replicas(lws))}
        for workload in workloads.values():
            if namespace(workload) != namespace(lws) or not owned_by(workload, lws):
                continue
            if name(workload) not in wanted:
                out.add((namespace(workload), name(workload)))
    return out


class LeaderWorkerSetGroups:
    NAME: ClassVar[str] = "leaderworkerset-groups"
    WATCHES: ClassVar[tuple[Resource, ...]] = (PODS, LEADERWORKERSETS, WORKLOADS)

    async def run(self, ctx: ControllerContext) -> None:
        await run_passes(ctx, self.WATCHES, lambda: self._pass(ctx))

    async def _pass(self, ctx: ControllerContext) -> bool:
        """One round of adoptions and deletions; whether every write went through."""
        sets = {f"{namespace(s)}/{name(s)}": s for s in ctx.store(LEADERWORKERSETS).values()}
        workloads = {f"{namespace(w)}/{name(w)}": w for w in ctx.store(WORKLOADS).values()}
        ok = True
        for workload, patch in adoptions(sets, workloads):
            ok &= await patch_or_delete(ctx, WORKLOADS, workload, patch)
        gone = removed_groups(ctx.store(PODS).values(), sets) | surplus(sets, workloads)
        for ns, wl_name in gone:
            found = workloads.get(f"{ns}/{wl_name}")
            if found is not None and not meta(found).get("deletionTimestamp"):
                ok &= await patch_or_delete(ctx, WORKLOADS, found, None)
        return ok


@hookimpl
def kq_register_controllers(register: Register) -> None:
    register(LeaderWorkerSetGroups)
