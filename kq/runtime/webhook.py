"""The webhook server: AdmissionReview v1 and ConversionReview v1 over TLS, with certificate
hot reload.

Each path is registered with the review it is posted (admission unless told otherwise).
Handlers see the review's ``request`` and return the fields of its ``response`` (for admission
``allowed``, ``status``, ``patchType``/``patch``; for conversion ``convertedObjects`` and
``result``); the envelope and the uid are handled here. The TLS context reloads the
certificate files when they change, so rotation needs no restart: Python applies a reloaded
chain to every later handshake.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

log = structlog.get_logger("kq.runtime.webhook")

ReviewHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
CaPublisher = Callable[[bytes], Awaitable[None]]
"""Told the CA's PEM whenever a new certificate is loaded, to update the caBundles."""


@dataclass(frozen=True)
class Review:
    """The envelope of one kind of review: what the API server posts, and what a handler
    that raised answers (the fields of ``response``, given the error's message)."""

    api_version: str
    kind: str
    failed: Callable[[str], dict[str, Any]]

    def wrap(self, response: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": self.api_version, "kind": self.kind, "response": response}


# As controller-runtime: an errored review, which the API server turns into a rejection
# (failurePolicy Fail) or ignores (Ignore).
ADMISSION = Review(
    "admission.k8s.io/v1",
    "AdmissionReview",
    lambda message: {"allowed": False, "status": {"code": 500, "message": message}},
)
# A failed conversion fails the request that needed it, with this message.
CONVERSION = Review(
    "apiextensions.k8s.io/v1",
    "ConversionReview",
    lambda message: {"convertedObjects": [], "result": {"status": "Failure", "message": message}},
)


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
        self._publishers: list[CaPublisher] = [] if publish_ca is None else [publish_ca]
        self._handlers: dict[str, tuple[ReviewHandler, Review]] = {}
        self._stamp: tuple[float, ...] = ()
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.listening = asyncio.Event()

    @property
    def paths(self) -> list[str]:
        return sorted(self._handlers)

    def register(self, path: str, handler: ReviewHandler, review: Review = ADMISSION) -> None:
        if path in self._handlers:
            raise ValueError(f"webhook path {path} is already registered")
        self._handlers[path] = (handler, review)

    def add_ca_publisher(self, publisher: CaPublisher) -> None:
        """Also tell ``publisher`` each newly loaded CA; add before ``run``."""
        self._publishers.append(publisher)

    async def run(self) -> None:
        await self._refresh()
        app = web.Application()
        for path, (handler, review) in self._handlers.items():
            app.router.add_post(path, _endpoint(handler, review))
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
        ca_pem = (self.cert_dir / "ca.crt").read_bytes()
        for publish in self._publishers:
            await publish(ca_pem)


def _endpoint(
    handler: ReviewHandler, review: Review
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def endpoint(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            question = body["request"]
            uid = question["uid"]
        except (ValueError, KeyError, TypeError):
            message = f"not a review: expected a {review.api_version} {review.kind}"
            return web.json_response({"message": message}, status=400)
        try:
            result = await handler(question)
        except Exception as exc:
            log.exception("webhook handler failed", path=request.path)
            result = review.failed(str(exc))
        return web.json_response(review.wrap({**result, "uid": uid}))

    return endpoint
