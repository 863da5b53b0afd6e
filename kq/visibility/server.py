"""Serving the visibility API over HTTPS, as an aggregated API server.

The serving certificate is the webhook server's (the same files in the same directory, which
every replica shares through a Secret); the APIService skips verifying it, as upstream's does.
Only the API server's front proxy may call (see ``kq.visibility.auth``), unless the API server
publishes no front-proxy settings and the server listens on loopback only (the embedded API
server of ``kq dev``, which has no users either).
"""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from pathlib import Path

import structlog
from aiohttp import web

from kq.runtime.client import KubeClient
from kq.visibility import auth
from kq.visibility.api import Gate, QueueSource, SchedulerSource, build_app, status
from kq.visibility.summary import RawLookup

log = structlog.get_logger("kq.visibility")

RELOAD_CHECK_S = 60.0
"""How often the certificate files are looked at again (the webhook server renews them)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def front_proxy_gate(proxy: auth.FrontProxy | None, loopback: bool) -> Gate:
    async def gate(request: web.Request) -> web.Response | None:
        if proxy is None:
            if loopback:
                return None
            return status(401, "Unauthorized", "the API server publishes no front proxy CA")
        transport = request.transport
        peer = None if transport is None else transport.get_extra_info("peercert")
        who = auth.caller(proxy, peer, request.headers)
        if isinstance(who, str):
            return status(401, "Unauthorized", f"Unauthorized: {who}")
        return None

    return gate


class VisibilityServer:
    def __init__(
        self,
        client: KubeClient,
        queues: QueueSource,
        raw: RawLookup,
        cert_dir: Path,
        host: str,
        port: int,
        certificates_ready: asyncio.Event,
        scheduler: SchedulerSource | None = None,
    ) -> None:
        """``scheduler``: the leading admission controller's, for explanations."""
        self._client = client
        self._queues = queues
        self._raw = raw
        self._scheduler = scheduler
        self._cert_dir = cert_dir
        self._host = host
        self.port = port
        self._ready = certificates_ready
        self._stamp: tuple[float, float] | None = None
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.listening = asyncio.Event()

    async def run(self) -> None:
        """Until cancelled. A port already taken is logged, not fatal: the visibility API is
        for people looking, and admission must not stop for it."""
        await self._ready.wait()
        self._reload()
        proxy = await auth.load_front_proxy(self._client)
        loopback = is_loopback(self._host)
        if proxy is not None:
            auth.trust_front_proxy(self.context, proxy)
        elif not loopback:
            log.error("no front proxy CA published: every visibility request is refused")
        gate = front_proxy_gate(proxy, loopback)
        app = build_app(self._queues, self._raw, gate, self._scheduler)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host or None, self.port, ssl_context=self.context)
            try:
                await site.start()
            except OSError as exc:
                log.error("visibility server not started", port=self.port, error=str(exc))
                await asyncio.Event().wait()
            self.port = runner.addresses[0][1]
            self.listening.set()
            log.info("visibility server listening", port=self.port, front_proxy=proxy is not None)
            while True:
                await asyncio.sleep(RELOAD_CHECK_S)
                self._reload()
        finally:
            await runner.cleanup()

    def _reload(self) -> None:
        cert, key = self._cert_dir / "tls.crt", self._cert_dir / "tls.key"
        stamp = (cert.stat().st_mtime, key.stat().st_mtime)
        if stamp == self._stamp:
            return
        try:
            self.context.load_cert_chain(cert, key)
        except ssl.SSLError as exc:
            if self._stamp is None:
                raise
            log.warning("keeping the previous certificate: reload failed", error=str(exc))
            return
        self._stamp = stamp
