"""The dashboard's HTTP server: the page, the fragment its script polls, and the same data as
JSON for scripts. Read-only: it answers GETs and never writes to the cluster.

There is no authentication of its own: ``kq dev`` serves it on loopback, and ``kq run`` only
when asked (``--dashboard-address``), for ``kubectl port-forward`` to reach.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import structlog
from aiohttp import web

from kq import jsoncodec
from kq.dashboard import render
from kq.dashboard.gather import Reader
from kq.runtime.client import KubeClient

log = structlog.get_logger("kq.dashboard")
HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``:PORT`` for every interface); a clear ``ValueError`` otherwise."""
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r} is not HOST:PORT with a port from 0 to 65535")
    return host.strip("[]"), int(port)


def build_app(client: KubeClient) -> web.Application:
    reader = Reader(client)

    def selected(request: web.Request) -> str | None:
        return request.query.get("workload") or None

    async def page(request: web.Request) -> web.Response:
        view = await reader.view(selected(request))
        return web.Response(text=render.page(view, selected(request)),
                            content_type="text/html", headers=HEADERS)  # fmt: skip

    async def fragment(request: web.Request) -> web.Response:
        view = await reader.view(selected(request))
        return web.Response(text=render.fragment(view, selected(request)),
                            content_type="text/html", headers=HEADERS)  # fmt: skip

    async def state(request: web.Request) -> web.Response:
        view = await reader.view(selected(request))
        body: Any = dataclasses.asdict(view)
        return web.Response(body=jsoncodec.dumps(body), content_type="application/json",
                            headers=HEADERS)  # fmt: skip

    async def healthy(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/fragment", fragment)
    app.router.add_get("/api/state", state)
    app.router.add_get("/healthz", healthy)
    return app


class Dashboard:
    """Serves until cancelled; ``url`` is set once it listens."""

    def __init__(self, client: KubeClient, host: str, port: int) -> None:
        self._client = client
        self._host = host
        self.port = port
        self.url = ""
        self.listening = asyncio.Event()

    async def run(self) -> None:
        runner = web.AppRunner(build_app(self._client), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host or None, self.port).start()
            self.port = runner.addresses[0][1]
            shown = self._host if self._host and self._host != "0.0.0.0" else "127.0.0.1"
            self.url = f"http://{_bracketed(shown)}:{self.port}/"
            self.listening.set()
            log.info("dashboard listening", url=self.url)
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    async def run_logged(self) -> None:
        """``run`` for ``kq run``: a port already taken is logged, not fatal, since the
        dashboard is for people looking and admission must not stop for it."""
        try:
            await self.run()
        except OSError as exc:
            log.error("dashboard not started", host=self._host, port=self.port, error=str(exc))
            await asyncio.Event().wait()


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
