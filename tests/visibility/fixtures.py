"""``kq run`` serving the visibility API, reached through the API server's aggregation."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from kq.runtime.client import KubeClient
from kq.sandbox.visibility import register_visibility
from kq.visibility.summary import GROUP
from tests.controllers.helpers import apply, eventually, namespace
from tests.harness import Cluster
from tests.kqrun import free_port, kq_run

Object = dict[str, Any]
PORTS: dict[str, int] = {}


def visibility_config(port: int) -> str:
    return f"visibilityServer:\n  bindAddress: 127.0.0.1\n  bindPort: {port}\n"


@asynccontextmanager
async def serving(
    cluster: Cluster, workdir: Path, ns: str, extra_config: str = ""
) -> AsyncIterator[KubeClient]:
    """``kq run`` in ``ns`` with its APIServices registered; yields a client once the API
    server forwards to it. ``PORTS[ns]`` is where kq run serves it."""
    port = PORTS[ns] = free_port()
    apply(cluster, workdir / "cache", namespace(ns))
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        await register_visibility(client, ns, port)
        with kq_run(cluster, workdir, ns, visibility_config(port) + extra_config):
            await eventually(
                lambda: pending_in(client, "clusterqueues", "nowhere", expect_missing=True),
                "the visibility API to answer through the API server",
            )
            yield client


async def pending_in(
    client: KubeClient,
    kind: str,
    name: str,
    *,
    namespace: str | None = None,
    version: str = "v1beta1",
    query: Mapping[str, str] | None = None,
    expect_missing: bool = False,
) -> list[Object] | bool:
    """The items of a pendingworkloads read (or, ``expect_missing``, whether it says 404)."""
    base = f"/apis/{GROUP}/{version}"
    if namespace is not None:
        base += f"/namespaces/{namespace}"
    path = f"{base}/{kind}/{name}/pendingworkloads"
    try:
        answer = await client.request("GET", path, query=list((query or {}).items()))
    except Exception as exc:
        if expect_missing and getattr(exc, "not_found", False):
            return True
        raise
    assert answer["kind"] == "PendingWorkloadsSummary"
    assert answer["apiVersion"] == f"{GROUP}/{version}"
    items: list[Object] = answer["items"]
    return items


def positions(items: list[Object]) -> list[tuple[str, int, int]]:
    return [
        (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"])
        for i in items
    ]
