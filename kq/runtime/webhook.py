"""The admission webhook server: AdmissionReview v1 over TLS, with certificate hot reload.

Handlers see the ``request`` of an AdmissionReview and return the fields of its ``response``
(``allowed``, ``status``, ``patchType``/``patch``); the envelope and the uid are handled here.
The TLS context reloads the certificate files when they change, so rotation needs no restart:
Python applies a reloaded chain to every later handshake.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

log = structlog.get_logger("kq.runtime.webhook")

AdmissionHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
CaPublisher = Callable[[bytes], Awaitable[None]]
"""Told the CA's PEM whenever a new certificate is loaded, to update the caBundles."""
REVIEW = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}


class WebhookServer:
    """Serves registered paths on ``port``; renews self-signed certificates when asked to."""

    def __init__(
        self,
        port: int,
        cert_dir: Path,
        *,
        host: str | None = None,
        provision: Callable[[], Awaitable[None]] | None = None,
        check_interval: float = 3600.0,
        publish_ca: CaPublisher | None = None,
    ) -> None:
        self.port = port
        self.cert_dir = cert_dir
        self._host = host
        # Renews and installs kq's own certificates; without it the files are supplied.
        self._provision = provision
        self._check_interval = check_interval
        self._publish_ca = publish_ca
        self._handlers: dict[str, AdmissionHandler] = {}
        self._stamp: tuple[float, ...] = ()
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.listening = asyncio.Event()

    @property
    def paths(self) -> list[str]:
        return sorted(self._handlers)

    def register(self, path: str, handler: AdmissionHandler) -> None:
        if path in self._handlers:
            raise ValueError(f"webhook path {path} is already registered")
        self._handlers[path] = handler

    async def run(self) -> None:
        await self._refresh()
        app = web.Application()
        for path, handler in self._handlers.items():
            app.router.add_post(path, self._endpoint(handler))
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self.port, ssl_context=self.context)
            await site.start()
            self.port = runner.addresses[0][1]
            self.listening.set()
            log.info("webhook server listening", port=self.port, paths=sorted(self._handlers))
            while True:
                await asyncio.sleep(self._check_interval)
                await self._refresh()
        finally:
            await runner.cleanup()

    async def _refresh(self) -> None:
        """Provision certificates if kq manages them, then reload the files if they changed."""
        if self._provision is not None:
            await self._provision()
        cert, key = self.cert_dir / "tls.crt", self.cert_dir / "tls.key"
        stamp = (cert.stat().st_mtime, key.stat().st_mtime)
        if stamp == self._stamp:
            return
        try:
            self.context.load_cert_chain(cert, key)
        except ssl.SSLError as exc:
            if not self._stamp:
                raise
            log.warning("keeping the previous certificate: reload failed", error=str(exc))
            return
        self._stamp = stamp
        if self._publish_ca is not None:
            await self._publish_ca((self.cert_dir / "ca.crt").read_bytes())

    def _endpoint(
        self, handler: AdmissionHandler
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def endpoint(request: web.Request) -> web.Response:
            try:
                review = await request.json()
                admission = review["request"]
                uid = admission["uid"]
            except (ValueError, KeyError, TypeError):
                return web.json_response({"message": "not an AdmissionReview"}, status=400)
            try:
                result = await handler(admission)
            except Exception as exc:
                log.exception("webhook handler failed", path=request.path)
                # As controller-runtime: an errored review, which the API server turns into a
                # rejection (failurePolicy Fail) or ignores (Ignore).
                result = {"allowed": False, "status": {"code": 500, "message": str(exc)}}
            return web.json_response({**REVIEW, "response": {**result, "uid": uid}})

        return endpoint
