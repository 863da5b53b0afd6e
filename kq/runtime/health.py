"""The probe endpoints (liveness, readiness: every informer synced) and serving an app."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Sequence

from aiohttp import web

from kq.config import Health

Readiness = Callable[[], Sequence[str]]
"""Names of what is not ready yet; empty means ready."""


def build_app(health: Health, not_ready: Readiness) -> web.Application:
    async def live(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def ready(_: web.Request) -> web.Response:
        waiting = not_ready()
        if waiting:
            return web.Response(status=503, text="not synced: " + ", ".join(waiting))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get(f"/{health.liveness_endpoint_name}", live)
    app.router.add_get(f"/{health.readiness_endpoint_name}", ready)
    return app


def split_address(address: str) -> tuple[str | None, int]:
    """``host:port`` as aiohttp wants it; an empty host binds every interface."""
    host, _, port = address.rpartition(":")
    return (host or None), int(port)


async def serve(
    app: web.Application, addresses: Sequence[str], ssl_context: ssl.SSLContext | None = None
) -> web.AppRunner:
    """Listen on each distinct non-empty address; the caller cleans the runner up."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    for address in dict.fromkeys(a for a in addresses if a):
        host, port = split_address(address)
        site = web.TCPSite(runner, host, port, reuse_address=True, ssl_context=ssl_context)
        await site.start()
    return runner
