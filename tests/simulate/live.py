"""A live ``kq dev`` for the simulator's tests, and a proxy that counts what is sent to it."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from tests.e2e.kqdev import KubectlSession

Obj = dict[str, Any]


class Kubectl(KubectlSession):
    def apply(self, *objects: Obj) -> None:
        self("apply", "-f", "-", input=yaml.safe_dump_all(objects))

    def workloads(self, namespace: str) -> list[Obj]:
        items: list[Obj] = json.loads(self("get", "workloads", "-n", namespace, "-o", "json"))[
            "items"
        ]
        return items


class CountingProxy:
    """Plain HTTP in front of an API server: every request counted by method; GETs are passed
    on, anything else is refused (405) so a write never reaches the server."""

    def __init__(self, upstream: KubeClient) -> None:
        self.upstream = upstream
        self.methods: Counter[str] = Counter()
        self.paths: list[str] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.methods[request.method] += 1
        self.paths.append(request.path)
        if request.method != "GET":
            return web.json_response(_status(405, "MethodNotAllowed"), status=405)
        try:
            body = await self.upstream.request(
                "GET", request.path, query=list(request.query.items())
            )
        except ApiError as exc:
            status = exc.status or 502
            return web.json_response(_status(status, exc.reason or "Error"), status=status)
        return web.json_response(body)


def _status(code: int, reason: str) -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": reason}  # fmt: skip


@asynccontextmanager
async def counting_proxy(kubeconfig: Path, work: Path) -> AsyncIterator[tuple[CountingProxy, Path]]:
    """The proxy and a kubeconfig that points at it."""
    async with await KubeClient.connect(kubeconfig) as upstream:
        proxy = CountingProxy(upstream)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", proxy.handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "proxy",
            "clusters": [{"name": "proxy", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
            "users": [{"name": "proxy", "user": {}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy"}}],
        }  # fmt: skip
        path = work / "proxy.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        try:
            yield proxy, path
        finally:
            await runner.cleanup()
