"""The webhook server: AdmissionReview envelope over TLS, and certificate rotation in place."""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path
from typing import Any

import aiohttp

from kq.runtime import certs
from kq.runtime.webhook import WebhookServer
from tests.harness import eventually


async def deny_default(request: dict[str, Any]) -> dict[str, Any]:
    if request["object"]["metadata"]["name"] == "boom":
        raise RuntimeError("handler bug")
    allowed = request["namespace"] != "default"
    return {"allowed": allowed, "status": {"code": 403, "message": "not in default"}}


def review(uid: str, name: str, namespace: str) -> dict[str, Any]:
    request = {"uid": uid, "namespace": namespace, "object": {"metadata": {"name": name}}}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


async def post(port: int, ca: Path, body: object) -> tuple[int, Any]:
    context = ssl.create_default_context(cafile=str(ca))
    async with aiohttp.ClientSession() as session:
        url = f"https://127.0.0.1:{port}/validate"
        async with session.post(url, json=body, ssl=context) as response:
            return response.status, await response.json()


async def test_reviews_over_tls_and_rotation_without_restart(tmp_path: Path) -> None:
    published: list[bytes] = []

    async def publish(ca_pem: bytes) -> None:
        published.append(ca_pem)

    async def provision() -> None:
        if await asyncio.to_thread(certs.needs_renewal, tmp_path):
            await asyncio.to_thread(certs.generate, tmp_path, ["kq-webhook.kq.svc"])

    server = WebhookServer(
        0, tmp_path, host="127.0.0.1", check_interval=0.2, provision=provision, publish_ca=publish
    )
    server.register("/validate", deny_default)
    task = asyncio.create_task(server.run())
    try:
        await asyncio.wait_for(server.listening.wait(), 10)
        ca = tmp_path / "ca.crt"
        status, body = await post(server.port, ca, review("u1", "a", "default"))
        assert status == 200
        assert body["response"]["uid"] == "u1"
        assert body["response"]["allowed"] is False
        _, body = await post(server.port, ca, review("u2", "boom", "team"))
        assert body["response"]["status"]["code"] == 500
        status, _ = await post(server.port, ca, {"nope": 1})
        assert status == 400

        # Force renewal: a certificate "expiring" within 10 years is due now.
        old_ca = ca.read_bytes()
        assert certs.needs_renewal(tmp_path, within=10 * 365 * 24 * 3600)
        os.remove(tmp_path / "tls.crt")

        async def answered_with_the_new_chain() -> Any:
            if ca.read_bytes() == old_ca:
                return None  # not renewed yet
            try:
                return (await post(server.port, ca, review("u3", "a", "team")))[1]
            except aiohttp.ClientSSLError:
                return None  # renewed, but the server still serves the old chain

        body = await eventually(answered_with_the_new_chain, "the new chain", interval=0.05)
        assert published == [old_ca, ca.read_bytes()]
        assert body["response"] == {
            "allowed": True,
            "status": body["response"]["status"],
            "uid": "u3",
        }
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
