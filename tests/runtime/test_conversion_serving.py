"""The webhook server answers ConversionReview on /convert beside AdmissionReview paths, and
kq's CA goes into the conversion webhook of CRDs set to Webhook conversion, and no other."""

from __future__ import annotations

import asyncio
import base64
import ssl
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from kq.crds.conversion import V1BETA1, V1BETA2
from kq.runtime import certs
from kq.runtime.certs import inject_conversion_ca_bundle
from kq.runtime.client import KubeClient
from kq.runtime.resources import CUSTOM_RESOURCE_DEFINITIONS
from kq.runtime.webhook import CONVERSION, WebhookServer
from kq.webhooks.conversion import CONVERT, respond
from tests.harness import Cluster

BROKEN = "/convert-broken"


async def _broken(request: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("handler bug")


@asynccontextmanager
async def _serving(cert_dir: Path) -> AsyncIterator[int]:
    await asyncio.to_thread(certs.generate, cert_dir, ["kq-webhook.kq.svc"])
    server = WebhookServer(0, cert_dir, host="127.0.0.1")
    server.register(CONVERT, respond, CONVERSION)
    server.register(BROKEN, _broken, CONVERSION)
    task = asyncio.create_task(server.run())
    try:
        await asyncio.wait_for(server.listening.wait(), 10)
        yield server.port
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _post(port: int, ca: Path, path: str, body: object) -> tuple[int, Any]:
    context = ssl.create_default_context(cafile=str(ca))
    async with aiohttp.ClientSession() as session:
        url = f"https://127.0.0.1:{port}{path}"
        async with session.post(url, json=body, ssl=context) as response:
            return response.status, await response.json()


def _conversion_review(uid: str, objects: list[dict[str, Any]]) -> dict[str, Any]:
    request = {"uid": uid, "desiredAPIVersion": V1BETA2, "objects": objects}
    return {"apiVersion": CONVERSION.api_version, "kind": CONVERSION.kind, "request": request}


async def test_convert_answers_a_conversion_review(tmp_path: Path) -> None:
    queue = {"apiVersion": V1BETA1, "kind": "ClusterQueue", "metadata": {"name": "cq"},
             "spec": {"cohort": "team"}}  # fmt: skip
    async with _serving(tmp_path) as port:
        ca = tmp_path / "ca.crt"
        status, body = await _post(port, ca, CONVERT, _conversion_review("u1", [queue]))
        assert status == 200
        assert (body["apiVersion"], body["kind"]) == ("apiextensions.k8s.io/v1", "ConversionReview")
        response = body["response"]
        assert response["uid"] == "u1"
        assert response["result"] == {"status": "Success"}
        [converted] = response["convertedObjects"]
        assert converted["apiVersion"] == V1BETA2
        assert converted["spec"] == {"cohortName": "team"}

        # Not a kind kq converts: the review fails, and says why.
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
        _, body = await _post(port, ca, CONVERT, _conversion_review("u2", [pod]))
        assert body["response"]["uid"] == "u2"
        assert body["response"]["result"]["status"] == "Failure"
        assert "Pod" in body["response"]["result"]["message"]

        # A handler that raises answers a failed conversion, not an admission denial.
        _, body = await _post(port, ca, BROKEN, _conversion_review("u3", [queue]))
        assert body["kind"] == "ConversionReview"
        assert body["response"] == {
            "uid": "u3",
            "convertedObjects": [],
            "result": {"status": "Failure", "message": "handler bug"},
        }

        status, body = await _post(port, ca, CONVERT, {"nope": 1})
        assert status == 400
        assert body["message"].endswith("apiextensions.k8s.io/v1 ConversionReview")


def _crd(group: str, conversion: dict[str, Any]) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    versions = [
        {"name": name, "served": True, "storage": name == "v1", "schema": schema}
        for name in ("v1", "v2")
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
            "scope": "Namespaced",
            "versions": versions,
            "conversion": conversion,
        },
    }


def _client_config(crd: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = crd["spec"]["conversion"]["webhook"]["clientConfig"]
    return config


async def test_the_ca_goes_into_webhook_converted_crds_only(
    cluster: Cluster, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:6]
    # Nothing listens there: the server only calls a conversion webhook when asked for a
    # version other than the stored one, which this test never does.
    url = "https://127.0.0.1:9/convert"
    webhook = {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": url}},
    }
    elsewhere = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                 "clientConfig": {"url": "https://127.0.0.1:10/convert"}}}  # fmt: skip
    by_webhook = _crd(f"hook-{tag}.kqtest.example.com", webhook)
    plain = _crd(f"none-{tag}.kqtest.example.com", {"strategy": "None"})
    by_another = _crd(f"other-{tag}.kqtest.example.com", elsewhere)
    names = [c["metadata"]["name"] for c in (by_webhook, plain, by_another)]
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        for crd in (by_webhook, plain, by_another):
            await client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
        try:
            # kube-apiserver parses a CRD's caBundle: it must be a real certificate.
            await asyncio.to_thread(certs.generate, tmp_path, ["kq-webhook.kq.svc"])
            pem = (tmp_path / "ca.crt").read_bytes()
            await inject_conversion_ca_bundle(
                client, pem, [*names, "absent.kqtest.example.com"], port=9
            )
            injected = await client.get(CUSTOM_RESOURCE_DEFINITIONS, names[0])
            assert _client_config(injected) == {
                "url": url,
                "caBundle": base64.b64encode(pem).decode(),
            }
            untouched = await client.get(CUSTOM_RESOURCE_DEFINITIONS, names[1])
            assert untouched["spec"]["conversion"] == {"strategy": "None"}
            # Another process's webhook (by URL, not on our port) keeps its own CA.
            other = await client.get(CUSTOM_RESOURCE_DEFINITIONS, names[2])
            assert "caBundle" not in _client_config(other)

            # Every replica publishes the same CA: the second one writes nothing.
            await inject_conversion_ca_bundle(client, pem, names, port=9)
            again = await client.get(CUSTOM_RESOURCE_DEFINITIONS, names[0])
            version = again["metadata"]["resourceVersion"]
            assert version == injected["metadata"]["resourceVersion"]
        finally:
            for name in names:
                await client.delete(CUSTOM_RESOURCE_DEFINITIONS, name)
