"""Helpers for the serving-controller tests: a simulated cluster in a namespace of its own,
manifests, and probes over HTTP."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import EVENTS, NAMESPACES, PODS, Resource
from kq.sandbox.cluster.clock import SandboxClock
from kq.sandbox.cluster.driver import Settings, run_simulated_cluster
from kq.sandbox.cluster.profiles import load_profile
from tests.harness import eventually, not_found

SPEED = 60.0
T = TypeVar("T")


@asynccontextmanager
async def simulated(client: KubeClient, backend: str) -> AsyncIterator[str]:
    """A namespace of its own on a simulated cluster; a bare kube-apiserver needs our GC."""
    ns = f"serving-{uuid.uuid4().hex[:6]}"
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": ns}})  # fmt: skip
    ready = asyncio.Event()
    settings = Settings(collect_garbage=backend == "real")
    sandbox = asyncio.create_task(
        run_simulated_cluster(client, load_profile("s1"), SandboxClock(SPEED), ready=ready,
                              settings=settings)
    )  # fmt: skip
    try:
        await asyncio.wait_for(ready.wait(), 20)
        yield ns
    finally:
        sandbox.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sandbox


def pod_template(app: str, **annotations: str) -> dict[str, Any]:
    """A server container that never exits by itself, asking for a little CPU."""
    container = {"name": "server", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                 "resources": {"requests": {"cpu": "100m"}}}  # fmt: skip
    template: dict[str, Any] = {"metadata": {"labels": {"app": app}},
                                "spec": {"containers": [container]}}  # fmt: skip
    if annotations:
        template["metadata"]["annotations"] = annotations
    return template


async def wait_for(probe: Callable[[], Awaitable[T | None]], what: str) -> T:
    """``eventually`` with room for a loaded machine; a 404 is a miss, since the probed
    object may be between its deletion and its controller's re-creation."""
    return await eventually(probe, what, within=45, interval=0.05, retry=not_found)


async def events_until(
    client: KubeClient, ns: str, done: Callable[[list[dict[str, Any]]], bool], what: str
) -> list[dict[str, Any]]:
    """The namespace's Events in the order written, once ``done`` holds for them: the
    simulated cluster writes its Events after the changes they tell of, as a cluster does."""

    seen: set[str] = set()

    async def listed() -> list[dict[str, Any]] | None:
        items = (await client.list(EVENTS, namespace=ns))["items"]
        items.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
        seen.update(str(e.get("reason")) for e in items)
        return items if done(items) else None

    try:
        return await wait_for(listed, what)
    except AssertionError as exc:  # which were there tells a late Event from a lost one
        raise AssertionError(f"{exc}; reasons seen: {sorted(seen)}") from exc


async def pods(client: KubeClient, ns: str, selector: str = "") -> list[dict[str, Any]]:
    query = [("labelSelector", selector)] if selector else []
    items = (await client.list(PODS, namespace=ns, query=query))["items"]
    return sorted(items, key=lambda p: p["metadata"]["name"])


def live(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return pod["status"].get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conditions
    )


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    found = [c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == type_]
    assert found, f"no {type_} condition in {obj.get('status')}"
    return dict(found[0])


async def scale(client: KubeClient, resource: Resource, name: str, ns: str, to: int) -> None:
    await client.merge_patch(resource, name, {"spec": {"replicas": to}}, namespace=ns)
