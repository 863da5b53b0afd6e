"""Fault injection of the embedded server: errors, delays, dropped watches."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from tests.harness import Cluster, eventually


@pytest.fixture(autouse=True)
def _embedded_only(cluster: Cluster) -> None:
    if cluster.backend != "embedded":
        pytest.skip("fault injection is a feature of the embedded server only")


async def _faults(api: client.ApiClient, settings: dict[str, Any]) -> None:
    await api.call_api(
        "/kq/faults", "PUT", body=settings, response_types_map={}, auth_settings=["BearerToken"]
    )


async def test_injected_errors_and_delays(api: client.ApiClient, namespace: str) -> None:
    v1 = client.CoreV1Api(api)
    await _faults(api, {"errorRate": 1.0, "errorCode": 429, "match": f"/namespaces/{namespace}/"})
    try:
        with pytest.raises(ApiException) as info:
            await v1.list_namespaced_config_map(namespace)
        assert info.value.status == 429
        assert info.value.headers is not None
        assert info.value.headers["Retry-After"] == "1"
        await v1.list_namespaced_config_map("default")
        await _faults(api, {"delay": 0.5, "match": f"/namespaces/{namespace}/"})
        started = time.monotonic()
        await v1.list_namespaced_config_map(namespace)
        assert time.monotonic() - started >= 0.5
    finally:
        await _faults(api, {})
    await v1.list_namespaced_config_map(namespace)


async def test_dropped_watch_ends_the_stream(api: client.ApiClient, namespace: str) -> None:
    v1 = client.CoreV1Api(api)
    w = watch.Watch()

    async def consume() -> int:
        count = 0
        async with w:
            async for _ in w.stream(v1.list_namespaced_config_map, namespace, timeout_seconds=60):
                count += 1
        return count

    task = asyncio.create_task(consume())

    async def dropped() -> bool:
        # Dropping before the watch is open ends nothing, so drop until the stream has ended.
        await api.call_api(
            "/kq/drop-watches", "POST", response_types_map={}, auth_settings=["BearerToken"]
        )
        await asyncio.wait({task}, timeout=0.1)
        return task.done()

    await eventually(dropped, "the watch to end", within=10, interval=0)
    assert await task == 0
