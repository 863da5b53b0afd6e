"""``kq_register_controllers`` in ``kq run``: an out-of-tree plugin's own controller, both backends.

``examples/kq-plugin-pause`` watches ConfigMaps through its controller, writes to them through
the client kq hands it, vetoes admission to a paused ClusterQueue, and asks kq to try the
vetoed workloads again once the pause is lifted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import WORKLOADS, Resource
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    flavor,
    get_workload,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.harness import REPO, Cluster
from tests.kqrun import install_plugin, kq_run

PAUSE = REPO / "examples" / "kq-plugin-pause"
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pausing(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    site = install_plugin(PAUSE, tmp_path_factory.mktemp("pause-site"))
    workdir = tmp_path_factory.mktemp("kq-run")
    ns = f"kq-system-{suffix()}"
    apply(cluster, workdir / "cache", namespace(ns))
    with kq_run(cluster, workdir, ns, pythonpath=site) as log:
        yield log


def pause(ns: str, name: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "namespace": ns,
            "name": name,
            "labels": {"kq-pause.example/cluster-queue": cq},
        },
    }


async def test_a_plugin_controller_pauses_a_queue_and_lifts_the_pause(
    cluster: Cluster, pausing: Path, client: KubeClient, tmp_path: Path
) -> None:
    cache, s = tmp_path / "cache", suffix()
    ns, rf, cq = f"pause-{s}", f"rf-{s}", f"cq-{s}"
    apply(cluster, cache, namespace(ns), flavor(rf), cluster_queue(cq, rf, "cpu", 4),
          local_queue(ns, "lq", cq), pause(ns, "hold", cq))  # fmt: skip

    async def enforced() -> bool:
        cm = await client.get(CONFIG_MAPS, "hold", ns)
        return (cm["metadata"].get("annotations") or {}).get("kq-pause.example/enforced") == "true"

    await eventually(enforced, "the controller to mark the ConfigMap it enforces")
    apply(cluster, cache, workload(ns, "wl", "lq", {"cpu": 1}))

    async def paused() -> str | None:
        reserved = condition(await get_workload(client, ns, "wl"), "QuotaReserved") or {}
        return reserved.get("message") if reserved.get("reason") == "Vetoed" else None

    assert await eventually(paused, "wl vetoed") == f"admission to {cq} paused by {ns}/hold"
    await client.delete(CONFIG_MAPS, "hold", ns)
    # Nothing about the workload or its queue changes: only the plugin's retry lets it in.
    await eventually(lambda: admitted(client, ns, "wl"), "wl admitted once the pause is lifted")
    await client.delete(WORKLOADS, "wl", ns)  # no admitted Workload left for later suites
