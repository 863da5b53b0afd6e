"""Admission webhooks: the server calls an HTTPS AdmissionReview endpoint run by the test."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.apiserver.conftest import error_body

# The `type: ignore`s on client calls: see the note on kubernetes_asyncio's stubs in conftest.py.


def _certificate(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "hook.crt", tmp_path / "hook.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


async def _mutate(request: web.Request) -> web.Response:
    review = await request.json()
    req = review["request"]
    patch = [{"op": "add", "path": "/metadata/labels/mutated", "value": req["operation"].lower()}]
    response = {
        "uid": req["uid"],
        "allowed": True,
        "patchType": "JSONPatch",
        "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
        "warnings": ["mutated by the test webhook"],
    }
    return web.json_response({**review, "response": response})


async def _validate(request: web.Request) -> web.Response:
    review = await request.json()
    req = review["request"]
    labels = req["object"]["metadata"].get("labels") or {}
    allowed = "deny" not in labels
    response: dict[str, Any] = {"uid": req["uid"], "allowed": allowed}
    if not allowed:
        response["status"] = {"code": 403, "message": "label deny is not allowed"}
    return web.json_response({**review, "response": response})


async def _serve(cert: Path, key: Path, port: int = 0) -> web.AppRunner:
    app = web.Application()
    app.router.add_post("/mutate", _mutate)
    app.router.add_post("/validate", _validate)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
    return runner


@pytest.fixture
async def webhook_url(tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    cert, key = _certificate(tmp_path)
    runner = await _serve(cert, key)
    port = runner.addresses[0][1]
    yield f"https://127.0.0.1:{port}", base64.b64encode(cert.read_bytes()).decode()
    await runner.cleanup()


def _hook(name: str, url: str, ca: str, namespace: str, policy: str = "Fail") -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }
        ],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        "failurePolicy": policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    }


async def test_mutating_and_validating_webhooks(
    api: client.ApiClient, namespace: str, webhook_url: tuple[str, str]
) -> None:
    url, ca = webhook_url
    admission = client.AdmissionregistrationV1Api(api)
    v1 = client.CoreV1Api(api)
    mutating = {
        "metadata": {"name": f"{namespace}-mutate"},
        "webhooks": [_hook("mutate.kq.example.com", f"{url}/mutate", ca, namespace)],
    }
    validating = {
        "metadata": {"name": f"{namespace}-validate"},
        "webhooks": [_hook("validate.kq.example.com", f"{url}/validate", ca, namespace)],
    }
    await admission.create_mutating_webhook_configuration(mutating)  # type: ignore[arg-type]
    await admission.create_validating_webhook_configuration(validating)  # type: ignore[arg-type]
    try:
        created, _, headers = await v1.create_namespaced_config_map_with_http_info(
            namespace,
            {"metadata": {"name": "hooked", "labels": {"a": "b"}}},  # type: ignore[arg-type]
        )
        assert created.metadata.labels == {"a": "b", "mutated": "create"}
        assert "mutated by the test webhook" in headers.get("Warning", "")
        skipped = await v1.create_namespaced_config_map(
            namespace,
            {"metadata": {"name": "skipped", "labels": {"skip": "1"}}},  # type: ignore[arg-type]
        )
        assert "mutated" not in skipped.metadata.labels
        with pytest.raises(ApiException) as info:
            await v1.create_namespaced_config_map(
                namespace,
                {"metadata": {"name": "denied", "labels": {"deny": "1"}}},  # type: ignore[arg-type]
            )
        assert info.value.status == 403
        assert "label deny is not allowed" in json.loads(error_body(info.value))["message"]
    finally:
        await admission.delete_mutating_webhook_configuration(f"{namespace}-mutate")
        await admission.delete_validating_webhook_configuration(f"{namespace}-validate")


async def test_unreachable_webhook_honours_failure_policy(
    api: client.ApiClient, namespace: str, webhook_url: tuple[str, str]
) -> None:
    _, ca = webhook_url
    admission = client.AdmissionregistrationV1Api(api)
    v1 = client.CoreV1Api(api)
    dead = "https://127.0.0.1:1/validate"
    config = {
        "metadata": {"name": f"{namespace}-dead"},
        "webhooks": [
            _hook("ignore.kq.example.com", dead, ca, namespace, policy="Ignore"),
            _hook("fail.kq.example.com", dead, ca, namespace, policy="Fail"),
        ],
    }
    await admission.create_validating_webhook_configuration(config)  # type: ignore[arg-type]
    try:
        with pytest.raises(ApiException) as info:
            await v1.create_namespaced_config_map(namespace, {"metadata": {"name": "blocked"}})  # type: ignore[arg-type]
        assert info.value.status == 500
        message = json.loads(error_body(info.value))["message"]
        assert 'failed calling webhook "fail.kq.example.com"' in message
    finally:
        await admission.delete_validating_webhook_configuration(f"{namespace}-dead")


async def test_a_webhook_server_restarted_on_its_port_is_called_again(
    api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    """The API server keeps its connection to a webhook open; once the webhook's server has
    restarted, that connection is dead, and the next call opens a new one instead of failing."""
    cert, key = _certificate(tmp_path)
    runner = await _serve(cert, key)
    port = runner.addresses[0][1]
    ca = base64.b64encode(cert.read_bytes()).decode()
    url = f"https://127.0.0.1:{port}/mutate"
    admission = client.AdmissionregistrationV1Api(api)
    v1 = client.CoreV1Api(api)
    config = {
        "metadata": {"name": f"{namespace}-restart"},
        "webhooks": [_hook("restart.kq.example.com", url, ca, namespace)],
    }
    await admission.create_mutating_webhook_configuration(config)  # type: ignore[arg-type]
    try:
        for name in ("before", "after"):
            created = await _create_until_mutated(v1, namespace, name)
            assert created.metadata.labels == {"a": "b", "mutated": "create"}
            if name == "before":
                await runner.cleanup()
                runner = await _serve(cert, key, port)
    finally:
        await runner.cleanup()
        await admission.delete_mutating_webhook_configuration(f"{namespace}-restart")


async def _create_until_mutated(v1: client.CoreV1Api, namespace: str, name: str) -> Any:
    """Create a ConfigMap; kube-apiserver learns of a new configuration through a watch, so a
    first create it did not send to the webhook is deleted and made again."""
    for _ in range(50):
        body = {"metadata": {"name": name, "labels": {"a": "b"}}}
        created = await v1.create_namespaced_config_map(namespace, body)  # type: ignore[arg-type]
        if (created.metadata.labels or {}).get("mutated"):
            return created
        await v1.delete_namespaced_config_map(name, namespace)
        await asyncio.sleep(0.1)
    raise AssertionError(f"ConfigMap {name} was never sent to the webhook")
