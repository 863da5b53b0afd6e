"""Pause admission to a ClusterQueue with a ConfigMap: a plugin controller plus a veto.

A ConfigMap labelled ``kq-pause.example/cluster-queue: <name>`` holds that ClusterQueue's
pending workloads (the veto says which ConfigMap); deleting it lets them in at once, because
the controller asks kq to try vetoed workloads again. The controller also marks each pause it
enforces with the annotation ``kq-pause.example/enforced: "true"``.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from kq.plugin import (
    ApiError,
    ClusterQueue,
    ControllerContext,
    Register,
    Resource,
    WorkloadInfo,
    hookimpl,
)

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
LABEL = "kq-pause.example/cluster-queue"
ENFORCED = "kq-pause.example/enforced"

_paused: dict[str, str] = {}
"""ClusterQueue name to the ConfigMap (namespace/name) that pauses it, kept by the controller."""


class PauseController:
    NAME: ClassVar[str] = "pause"
    WATCHES: ClassVar[tuple[Resource, ...]] = (CONFIG_MAPS,)

    async def run(self, ctx: ControllerContext) -> None:
        changed = asyncio.Event()
        ctx.on_change(CONFIG_MAPS, changed.set)
        while True:
            await changed.wait()
            changed.clear()
            pauses = {}
            for cm in ctx.store(CONFIG_MAPS).values():
                meta = cm["metadata"]
                queue = (meta.get("labels") or {}).get(LABEL)
                if queue:
                    pauses[queue] = f"{meta['namespace']}/{meta['name']}"
                    await _mark(ctx, cm)
            lifted = set(_paused) - set(pauses)
            _paused.clear()
            _paused.update(pauses)
            if lifted:
                ctx.retry_vetoed()


async def _mark(ctx: ControllerContext, cm: dict[str, object]) -> None:
    meta = cm["metadata"]
    assert isinstance(meta, dict)
    if (meta.get("annotations") or {}).get(ENFORCED) == "true":
        return
    try:
        await ctx.client.merge_patch(
            CONFIG_MAPS,
            meta["name"],
            {"metadata": {"annotations": {ENFORCED: "true"}}},
            namespace=meta["namespace"],
        )
    except ApiError as exc:
        if exc.status != 404:  # deleted meanwhile: nothing to mark
            raise


@hookimpl
def kq_register_controllers(register: Register) -> None:
    register(PauseController)


@hookimpl
def kq_workload_admissible(workload: WorkloadInfo, cluster_queue: ClusterQueue) -> str | None:
    source = _paused.get(cluster_queue.name)
    return None if source is None else f"admission to {cluster_queue.name} paused by {source}"
