"""The metrics gate against a scripted API server: reviews sent, verdicts, and the cache."""

from __future__ import annotations

import json

from aiohttp import web

from kq.runtime.metrics_server import ALLOWED_TTL_S, DENIED_TTL_S, Gate
from tests.runtime.stub import serve

USERS = {"good": "alice", "nosy": "bob"}


async def route(request: web.Request) -> web.StreamResponse:
    body = json.loads(await request.read())
    if request.path.endswith("/tokenreviews"):
        user = USERS.get(body["spec"]["token"])
        status = {"authenticated": True, "user": {"username": user}} if user else {}
        return web.json_response({**body, "status": status})
    assert body["spec"]["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
    return web.json_response({**body, "status": {"allowed": body["spec"]["user"] == "alice"}})


async def test_reviews_decide_and_are_remembered_for_a_while() -> None:
    now = [0.0]
    async with serve(route) as (stub, client):
        gate = Gate(client, clock=lambda: now[0])
        assert (await gate.check("good")).status == 200
        assert (await gate.check("nosy")).status == 403
        assert (await gate.check("forged")).status == 401
        sent = len(stub.requests)
        assert sent == 5  # two reviews for each known token, one for the unknown
        assert (await gate.check("good")).status == 200
        assert len(stub.requests) == sent  # cached
        now[0] = DENIED_TTL_S + 1
        assert (await gate.check("nosy")).status == 403  # denials are kept briefly
        assert (await gate.check("good")).status == 200
        assert len(stub.requests) == sent + 2
        now[0] = ALLOWED_TTL_S + 1
        assert (await gate.check("good")).status == 200
        assert len(stub.requests) == sent + 4
