"""The client's wire contract: content types, preconditions, retries, limits."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s_client

from kq.runtime.client import ClientSettings, KubeClient, retry_on_conflict
from kq.runtime.errors import ApiError, Fenced
from kq.runtime.ratelimit import TokenBucket
from kq.runtime.resources import CLUSTER_QUEUES, EVENTS, WORKLOADS
from kq.runtime.wire import kind_key
from tests.runtime.stub import listening, serve


async def test_patches_carry_their_content_type_and_precondition() -> None:
    seen: list[tuple[str, str, dict[str, str], object]] = []

    async def route(request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        seen.append((request.path, request.content_type, dict(request.query), body))
        assert request.headers["User-Agent"].startswith("kq/")
        return web.json_response(body)

    async with serve(route) as (_, client):
        await client.merge_patch(
            WORKLOADS,
            "w",
            {"status": {"x": 1}},
            namespace="ns",
            resource_version="7",
            subresource="status",
        )
        await client.apply(CLUSTER_QUEUES, {"metadata": {"name": "cq"}, "spec": {}}, force=True)
    # Kueue's converted kinds go out in v1beta2, their storage version (storage_version.py).
    assert seen[0] == (
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status",
        "application/merge-patch+json",
        {},
        {"status": {"x": 1}, "metadata": {"resourceVersion": "7"}},
    )
    path, content_type, query, _ = seen[1]
    assert path == "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"
    assert content_type == "application/apply-patch+yaml"
    assert query == {"fieldManager": "kq", "force": "true"}


async def test_5xx_is_retried_and_4xx_is_not() -> None:
    answers = [503, 500, 200, 404]

    async def route(_: web.Request) -> web.StreamResponse:
        status = answers.pop(0)
        body = {"kind": "Status", "code": status, "reason": "X", "message": "m"}
        return web.json_response(body if status >= 300 else {"ok": True}, status=status)

    async with serve(route) as (_, client):
        assert await client.get(CLUSTER_QUEUES, "cq") == {"ok": True}
        with pytest.raises(ApiError) as caught:
            await client.get(CLUSTER_QUEUES, "cq")
    assert caught.value.not_found
    assert answers == []


async def test_a_fenced_client_asks_its_guard_before_each_write_and_retry() -> None:
    """A write decided while leading, refused (503) and retried after the lease is gone, is
    not sent again; reads still go out."""
    leading = [True]
    seen: list[str] = []

    async def route(request: web.Request) -> web.StreamResponse:
        seen.append(request.method)
        if request.method == "GET":
            return web.json_response({"ok": True})
        leading[0] = False  # the lease is lost while the write waits to be retried
        body = {"kind": "Status", "code": 503, "message": "busy"}
        return web.json_response(body, status=503)

    async with serve(route) as (_, client):
        fenced = client.fenced(lambda: leading[0])
        with pytest.raises(Fenced) as caught:
            await fenced.merge_patch(WORKLOADS, "w", {"status": {}}, namespace="ns")
        assert not caught.value.retriable
        assert await fenced.get(CLUSTER_QUEUES, "cq") == {"ok": True}
        with pytest.raises(Fenced):
            await fenced.create(EVENTS, {"metadata": {"namespace": "ns", "name": "e"}})
        assert await client.get(CLUSTER_QUEUES, "cq") == {"ok": True}  # the original: unguarded
    assert seen == ["PATCH", "GET", "GET"]


async def test_retry_on_conflict_rereads_until_it_succeeds() -> None:
    attempts: list[int] = []

    async def write() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ApiError(409, "stale", reason="Conflict")
        return "written"

    assert await retry_on_conflict(write) == "written"
    assert len(attempts) == 3


async def test_token_bucket_paces_after_the_burst() -> None:
    bucket = TokenBucket(qps=20, burst=5)
    started = time.monotonic()
    for _ in range(10):
        await bucket.acquire()
    # 5 free, then 5 more at 20/s: about 0.25 s.
    assert 0.2 <= time.monotonic() - started < 0.6


async def test_token_bucket_serves_waiters_first_come_first_served() -> None:
    bucket = TokenBucket(qps=50, burst=1)
    order: list[str] = []

    async def take(name: str) -> None:
        await bucket.acquire()
        order.append(name)

    first = [asyncio.create_task(take(n)) for n in "abc"]
    await asyncio.sleep(0)  # a has the token; b and c queue
    await asyncio.sleep(0.03)  # a token saved up again while b waits for the lock's turn
    await take("late")
    await asyncio.gather(*first)
    assert order == ["a", "b", "c", "late"]


async def test_each_kind_has_its_own_limiter_and_requests_are_counted() -> None:
    async def route(_: web.Request) -> web.StreamResponse:
        return web.json_response({})

    async with serve(route, qps=5, burst=3) as (_, client):
        started = time.monotonic()
        for _ in range(3):
            await client.get(WORKLOADS, "w", "ns")
            await client.merge_patch(WORKLOADS, "w", {}, namespace="ns", subresource="status")
        # Workloads spent their burst of 3 and waited for 3 more tokens at 5/s; Events did not.
        assert time.monotonic() - started >= 0.5
        started = time.monotonic()
        await client.create(EVENTS, {"metadata": {"namespace": "ns"}})
        assert time.monotonic() - started < 0.15
    assert client.requests == {
        ("GET", "workloads.kueue.x-k8s.io"): 3,
        ("PATCH", "workloads.kueue.x-k8s.io"): 3,
        ("POST", "events"): 1,
    }


def test_kind_key_names_plural_and_group() -> None:
    assert kind_key("/api/v1/namespaces/a/pods/p/status") == "pods"
    assert kind_key("/api/v1/namespaces/a") == "namespaces"
    assert kind_key("/api/v1/namespaces") == "namespaces"
    assert (
        kind_key("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq") == "clusterqueues.kueue.x-k8s.io"
    )
    assert kind_key("/apis/batch/v1/namespaces/a/jobs?watch=true") == "jobs.batch"
    assert kind_key("/version") == "/version"


async def test_proxy_variables_are_read_once_at_construction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://user:pw@proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    configuration = k8s_client.Configuration(host="http://api.example:6443")
    client = KubeClient(k8s_client.ApiClient(configuration), ClientSettings())
    try:
        rest = client._api.rest_client
        assert rest.proxy == "http://proxy.example:3128"
        assert rest.proxy_headers["Proxy-Authorization"].startswith("Basic ")
        assert not rest.pool_manager.trust_env
    finally:
        await client.close()


async def test_behind_a_proxy_calls_go_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    async def proxy(request: web.Request) -> web.StreamResponse:
        seen.append(f"{request.url.host}{request.path}")
        return web.json_response({"kind": "ClusterQueue"})

    async with listening(proxy) as url:
        monkeypatch.setenv("HTTP_PROXY", url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        configuration = k8s_client.Configuration(host="http://api.example:6443")
        client = KubeClient(k8s_client.ApiClient(configuration), ClientSettings())
        try:
            assert await client.get(CLUSTER_QUEUES, "cq") == {"kind": "ClusterQueue"}
        finally:
            await client.close()
    assert seen == ["api.example/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq"]


async def test_request_paths_are_percent_encoded_only_where_needed() -> None:
    raw_paths: list[str] = []

    async def route(request: web.Request) -> web.StreamResponse:
        raw_paths.append(request.raw_path)
        return web.json_response({})

    async with serve(route) as (_, client):
        await client.get(CLUSTER_QUEUES, "plain-name.v1_x~y")
        await client.get(CLUSTER_QUEUES, "with space")
    assert raw_paths == [
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/plain-name.v1_x~y",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/with%20space",
    ]
