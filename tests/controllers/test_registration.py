"""The admission controller as the ``kq run`` process runs it: shared informers, a runnable."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

from kq.config import KqConfig
from kq.controllers.admission import WATCHED
from kq.controllers.registration import register_admission
from kq.plugins import build_plugin_manager
from kq.runtime.client import KubeClient
from kq.runtime.manager import Manager
from kq.runtime.webhook import WebhookServer
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    eventually,
    flavor,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.harness import Cluster


async def test_registered_runnable_admits_with_the_managers_informers(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, tmp_path: Path
) -> None:
    manager = Manager(client, WebhookServer(0, tmp_path))
    config = KqConfig(namespace="default")
    register_admission(manager, config, build_plugin_manager(config.plugins))
    (runnable,) = manager.runnables
    assert (runnable.name, runnable.leader_only) == ("admission", True)
    assert {i.resource for i in manager.informers} == set(WATCHED)

    tasks = [asyncio.create_task(i.run()) for i in manager.informers]
    tasks.append(asyncio.create_task(runnable.start()))
    try:
        s = suffix()
        ns, rf, cq = f"reg-{s}", f"rf-{s}", f"cq-{s}"
        apply(
            cluster,
            kubectl_cache,
            namespace(ns),
            flavor(rf),
            cluster_queue(cq, rf, "cpu", 1),
            local_queue(ns, "lq", cq),
            workload(ns, "w", "lq", {"cpu": 1}),
        )
        await eventually(partial(admitted, client, ns, "w"), "admitted")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
