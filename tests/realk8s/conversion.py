"""The test plane's conversion webhook: kq's own ``/convert`` (its WebhookServer and handler,
a certificate from ``kq.runtime.certs``) on loopback, in a thread of its own for the plane's
whole life.

kueue.x-k8s.io stores v1beta2; a test (or kubectl) that reads or writes v1beta1 of a kind whose
versions differ makes the real kube-apiserver call it, as it calls `kq run`'s in a cluster set
up from deploy/ (whose CRD patch names a Service where this names a URL).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kq.runtime import certs
from kq.runtime.webhook import CONVERSION, WebhookServer
from kq.webhooks.conversion import CONVERT, respond, url_conversion

START_TIMEOUT_S = 60.0


@contextlib.contextmanager
def conversion_webhook(cert_dir: Path) -> Iterator[dict[str, Any]]:
    """Serve ``/convert`` until exit; yields the CRDs' ``spec.conversion`` calling it."""
    loop = asyncio.new_event_loop()
    started: list[tuple[asyncio.Task[None], dict[str, Any]]] = []
    ready = threading.Event()

    async def start() -> None:
        try:
            started.append(await serve_conversion(cert_dir))
        finally:
            ready.set()

    thread = threading.Thread(target=loop.run_forever, name="conversion-webhook", daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop)
    try:
        if not ready.wait(START_TIMEOUT_S) or not started:
            raise RuntimeError("the conversion webhook did not start listening")
        task, conversion = started[0]
        yield conversion
        asyncio.run_coroutine_threadsafe(_stop(task), loop).result(START_TIMEOUT_S)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(START_TIMEOUT_S)


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def serve_conversion(cert_dir: Path) -> tuple[asyncio.Task[None], dict[str, Any]]:
    """The serving task and the CRDs' ``spec.conversion`` calling it."""
    await asyncio.to_thread(certs.generate, cert_dir, ["localhost"])
    server = WebhookServer(0, cert_dir, host="127.0.0.1")
    server.register(CONVERT, respond, CONVERSION)
    task = asyncio.create_task(server.run())
    await server.listening.wait()
    ca_pem = (cert_dir / "ca.crt").read_bytes()
    return task, url_conversion(f"https://127.0.0.1:{server.port}{CONVERT}", ca_pem)
