"""Restart on the same SQLite file: objects and revisions continue; old watches resume or 410."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.exceptions import ApiException

from tests.harness import Cluster, embedded_apiserver

# The `type: ignore`s on client calls: see the note on kubernetes_asyncio's stubs in conftest.py.


@pytest.fixture(autouse=True)
def _embedded_only(request: pytest.FixtureRequest) -> None:
    if request.config.getoption("--backend") == "real":
        pytest.skip("restarts and compaction need a private embedded server")


@contextmanager
def _server(data_dir: Path, *args: str) -> Iterator[Cluster]:
    with embedded_apiserver(data_dir, ["--no-builtin-crds", *args]) as cluster:
        yield cluster


@asynccontextmanager
async def _core(cluster: Cluster) -> AsyncIterator[client.CoreV1Api]:
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=cfg)
    async with client.ApiClient(cfg) as api:
        yield client.CoreV1Api(api)


def _cm(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"k": name}}


async def _watch(v1: client.CoreV1Api, rv: str) -> list[tuple[str, str, int]]:
    events = []
    w = watch.Watch()
    async with w:
        async for event in w.stream(
            v1.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
        ):
            meta = event["raw_object"]["metadata"]
            events.append((event["type"], meta["name"], int(meta["resourceVersion"])))
    return events


async def test_objects_and_revisions_survive_restart(tmp_path: Path) -> None:
    with _server(tmp_path) as cluster:
        async with _core(cluster) as v1:
            first = await v1.create_namespaced_config_map("default", _cm("kept"))  # type: ignore[arg-type]
            before = (await v1.list_namespaced_config_map("default")).metadata.resource_version
            await v1.create_namespaced_config_map("default", _cm("later"))  # type: ignore[arg-type]
            await v1.delete_namespaced_config_map("kept", "default")
    with _server(tmp_path) as cluster:
        async with _core(cluster) as v1:
            listed = await v1.list_namespaced_config_map("default")
            assert [cm.metadata.name for cm in listed.items] == ["later"]
            assert int(listed.metadata.resource_version) > int(before)
            new = await v1.create_namespaced_config_map("default", _cm("after-restart"))  # type: ignore[arg-type]
            assert int(new.metadata.resource_version) > int(listed.metadata.resource_version)
            assert new.metadata.uid != first.metadata.uid
            # A watch from before the restart replays what happened since, in order.
            events = await _watch(v1, before)
            assert [(t, n) for t, n, _ in events] == [
                ("ADDED", "later"),
                ("DELETED", "kept"),
                ("ADDED", "after-restart"),
            ]
            rvs = [rv for _, _, rv in events]
            assert rvs == sorted(rvs)


async def test_watch_from_before_the_kept_history_gets_410(tmp_path: Path) -> None:
    with _server(tmp_path) as cluster:
        async with _core(cluster) as v1:
            start = (await v1.list_namespaced_config_map("default")).metadata.resource_version
            for i in range(6):
                await v1.create_namespaced_config_map("default", _cm(f"n{i}"))  # type: ignore[arg-type]
    with _server(tmp_path, "--history", "3") as cluster:
        async with _core(cluster) as v1:
            with pytest.raises(ApiException) as info:
                await _watch(v1, start)
            assert info.value.status == 410
            recent = (await v1.list_namespaced_config_map("default")).metadata.resource_version
            await v1.create_namespaced_config_map("default", _cm("fresh"))  # type: ignore[arg-type]
            assert [(t, n) for t, n, _ in await _watch(v1, recent)] == [("ADDED", "fresh")]
