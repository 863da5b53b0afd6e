"""A scripted API server for wire-level tests: each test decides every response."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client as k8s_client

from kq.runtime.client import ClientSettings, KubeClient

Route = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Stub:
    """Requests seen so far, and the function that answers the next one."""

    route: Route
    url: str = ""
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def watches(self) -> list[dict[str, str]]:
        return [query for _, _, query in self.requests if query.get("watch") == "true"]

    def lists(self) -> list[dict[str, str]]:
        return [q for m, _, q in self.requests if m == "GET" and q.get("watch") != "true"]


def obj(name: str, rv: str, namespace: str = "ns", **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}, **extra}


def listing(rv: str, *items: dict[str, Any], cont: str = "") -> web.Response:
    metadata = {"resourceVersion": rv, **({"continue": cont} if cont else {})}
    return web.json_response({"kind": "List", "metadata": metadata, "items": list(items)})


def event(kind: str, item: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": item}).encode() + b"\n"


def gone() -> bytes:
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    return event("ERROR", status)


async def stream(request: web.Request, *chunks: bytes, hold: bool = False) -> web.StreamResponse:
    """A 200 watch response carrying ``chunks``; ``hold`` keeps it open until the client leaves."""
    response = web.StreamResponse()
    response.content_type = "application/json"
    await response.prepare(request)
    for chunk in chunks:
        await response.write(chunk)
    if hold:
        await asyncio.Event().wait()
    return response


def scripted(lists: list[Route], watches: list[Route]) -> Route:
    """Answer LISTs and WATCHes from two scripts in order; a spent watch script hangs open."""

    async def route(request: web.Request) -> web.StreamResponse:
        script = watches if request.query.get("watch") == "true" else lists
        if script:
            return await script.pop(0)(request)
        return await stream(request, hold=True)

    return route


@asynccontextmanager
async def listening(route: Route) -> AsyncIterator[str]:
    """An HTTP server on a free local port answering every path with ``route``; its URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", route)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def serve(route: Route, **settings: Any) -> AsyncIterator[tuple[Stub, KubeClient]]:
    stub = Stub(route)

    async def handle(request: web.Request) -> web.StreamResponse:
        stub.requests.append((request.method, request.path, dict(request.query)))
        return await stub.route(request)

    async with listening(handle) as url:
        stub.url = url
        configuration = k8s_client.Configuration(host=url)
        client = KubeClient(k8s_client.ApiClient(configuration), ClientSettings(**settings))
        try:
            yield stub, client
        finally:
            await client.close()
