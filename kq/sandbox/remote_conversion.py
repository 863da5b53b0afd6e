"""``kq dev --kubeconfig`` serves kueue.x-k8s.io's conversion on loopback.

The server stores v1beta2; a client of v1beta1 (kubectl applying Kueue's v1beta1 manifests, a
``kubectl get clusterqueues.v1beta1.kueue.x-k8s.io``) needs the objects converted, which a
CRD with conversion strategy None does not do: it rewrites apiVersion only, and prunes the
fields the other version lacks. kq dev points the CRDs whose versions differ at the ``/convert``
of the kq it runs (on its loopback webhook port; kq puts its CA in their caBundle as ``kq run``
does) while it runs, and puts back what it found when it stops. A CRD converted by a
Service (a ``kq run`` in the cluster) is left to it; one converted by a URL (another kq dev
that is gone, a test plane's webhook) is taken over for the while.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import structlog

from kq.runtime.client import MERGE_PATCH, KubeClient
from kq.runtime.errors import ApiError
from kq.webhooks.conversion import CONVERT, CONVERTED_CRDS, url_conversion

log = structlog.get_logger("kq.sandbox.remote_conversion")

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NO_CONVERSION: dict[str, Any] = {"strategy": "None", "webhook": None}


async def convert_on_loopback(
    client: KubeClient, port: int, stack: contextlib.AsyncExitStack
) -> None:
    """Name kq's ``/convert`` on loopback ``port`` in the converted CRDs until ``stack``
    closes; call before kq starts, which then puts its CA in their caBundle."""
    conversion = url_conversion(f"https://127.0.0.1:{port}{CONVERT}", None)
    found: dict[str, dict[str, Any]] = {}
    stack.push_async_callback(_put_back, client, found)
    for name in CONVERTED_CRDS:
        current = await client.request("GET", f"{CRDS_PATH}/{name}")
        conversion_now = current["spec"].get("conversion") or {}
        if "service" in ((conversion_now.get("webhook") or {}).get("clientConfig") or {}):
            continue
        await _set(client, name, conversion)
        webhook = conversion_now.get("strategy") == "Webhook"
        found[name] = conversion_now if webhook else NO_CONVERSION


async def _set(client: KubeClient, name: str, conversion: dict[str, Any]) -> None:
    patch = {"spec": {"conversion": conversion}}
    await client.request("PATCH", f"{CRDS_PATH}/{name}", body=patch, content_type=MERGE_PATCH)


async def _put_back(client: KubeClient, found: dict[str, dict[str, Any]]) -> None:
    for name, conversion in found.items():
        try:
            await _set(client, name, conversion)
        except ApiError as exc:
            log.warning("CRD conversion not put back", crd=name, conversion=json.dumps(conversion),
                        error=str(exc))  # fmt: skip
