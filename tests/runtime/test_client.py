"""The client's wire contract: content types, preconditions, retries, limits."""

from __future__ import annotations

import json
import time

import pytest
from aiohttp import web

from kq.runtime.client import retry_on_conflict
from kq.runtime.errors import ApiError
from kq.runtime.ratelimit import TokenBucket
from kq.runtime.resources import CLUSTER_QUEUES, WORKLOADS
from tests.runtime.stub import serve


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
    assert seen[0] == (
        "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns/workloads/w/status",
        "application/merge-patch+json",
        {},
        {"status": {"x": 1}, "metadata": {"resourceVersion": "7"}},
    )
    path, content_type, query, _ = seen[1]
    assert path == "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq"
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
