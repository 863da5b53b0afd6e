"""Workloads of LeaderWorkerSet groups that no longer exist: deleted, as upstream's reconciler
deletes those of the groups a scale-down (or the set's deletion) removed.

A group's pods keep kq's finalizer until their Workload goes (pod groups wait for replacement
pods), so a removed group would hang, holding its quota, without this.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import structlog

from kq.hookspecs import Register, hookimpl
from kq.jobframework.objects import annotations_of, labels, meta, namespace
from kq.plugin import WORKLOADS, ApiError, ControllerContext, Resource
from kq_plugins.jobs.leaderworkerset import (
    FRAMEWORK,
    GROUP_INDEX_LABEL,
    GROUP_NAME_LABEL,
    SET_NAME_LABEL,
)
from kq_plugins.jobs.serving import SUSPENDING_PARENT_ANNOTATION

PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
LEADERWORKERSETS = Resource(
    "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", namespaced=True
)
RETRY_S = 1.0
log = structlog.get_logger(__name__)
Obj = dict[str, Any]


def removed_groups(pods: list[Obj], sets: dict[str, Obj]) -> set[tuple[str, str]]:
    """``(namespace, Workload)`` of the groups whose terminating pods' set is gone or smaller."""
    out = set()
    for pod in pods:
        own = labels(pod)
        if annotations_of(pod).get(SUSPENDING_PARENT_ANNOTATION) != FRAMEWORK:
            continue
        if not meta(pod).get("deletionTimestamp") or GROUP_NAME_LABEL not in own:
            continue
        lws = sets.get(f"{namespace(pod)}/{own.get(SET_NAME_LABEL, '')}")
        replicas = int((lws.get("spec") or {}).get("replicas", 1)) if lws else 0
        if (
            lws is None
            or meta(lws).get("deletionTimestamp")
            or (int(own.get(GROUP_INDEX_LABEL, "0")) >= replicas)
        ):
            out.add((namespace(pod), own[GROUP_NAME_LABEL]))
    return out


class LeaderWorkerSetGroups:
    NAME: ClassVar[str] = "leaderworkerset-groups"
    WATCHES: ClassVar[tuple[Resource, ...]] = (PODS, LEADERWORKERSETS)

    async def run(self, ctx: ControllerContext) -> None:
        wake = asyncio.Event()
        for resource in self.WATCHES:
            ctx.on_change(resource, wake.set)
        done: set[tuple[str, str]] = set()
        while True:
            wake.clear()
            sets = {f"{namespace(s)}/{meta(s)['name']}": s
                    for s in ctx.store(LEADERWORKERSETS).values()}  # fmt: skip
            failed = False
            for ns, name in removed_groups(ctx.store(PODS).values(), sets) - done:
                try:
                    await ctx.client.delete(WORKLOADS, name, ns)
                    done.add((ns, name))
                except ApiError as error:
                    if error.not_found:
                        done.add((ns, name))
                        continue
                    failed = True
                    log.warning("group Workload not deleted", workload=name, error=str(error))
            try:
                async with asyncio.timeout(RETRY_S if failed else None):
                    await wake.wait()
            except TimeoutError:
                pass


@hookimpl
def kq_register_controllers(register: Register) -> None:
    register(LeaderWorkerSetGroups)
