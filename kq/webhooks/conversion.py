"""ConversionReview (apiextensions.k8s.io/v1): the API server asks for objects in another
version of kueue.x-k8s.io; ``kq.crds.conversion`` answers. ``review(review) -> review``, no I/O.

Served at ``/convert`` by ``kq run``'s webhook server (``respond``), named in the
``spec.conversion`` of the CRDs in ``CONVERTED_CRDS``; ``kq run`` puts its CA in their
``caBundle``.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from kq.crds.conversion import GROUP, ConversionError, convert

API_VERSION = "apiextensions.k8s.io/v1"
KIND = "ConversionReview"
CONVERT = "/convert"
CONVERTED_CRDS = tuple(
    f"{plural}.{GROUP}"
    for plural in ("admissionchecks", "clusterqueues", "cohorts", "localqueues", "workloads")
)
"""The CRDs whose v1beta2 differs from v1beta1: only these need the webhook. The other kinds
differ in apiVersion alone, which the API server rewrites itself (strategy None)."""

Review = dict[str, Any]


def review(conversion_review: Review) -> Review:
    """The answer to a ConversionReview: every object converted, or a failure saying why
    (the API server then fails the request that needed the conversion)."""
    request = conversion_review.get("request")
    if not isinstance(request, dict) or not request.get("uid"):
        raise ValueError("not a ConversionReview request: no request.uid")
    response = {"uid": request["uid"], **_response(request)}
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


async def respond(request: dict[str, Any]) -> dict[str, Any]:
    """``review`` as ``kq.runtime.webhook.WebhookServer`` calls it: the request in, the
    response's fields but the uid out."""
    # A list read in v1beta2 converts every object at once: off the event loop, so the
    # leader's lease renewals and the informers are not held up behind it.
    return await asyncio.to_thread(_response, request)


def _response(request: dict[str, Any]) -> dict[str, Any]:
    wanted = str(request.get("desiredAPIVersion", ""))
    try:
        objects = [_converted(obj, wanted) for obj in request.get("objects") or ()]
    except ConversionError as exc:
        return {"convertedObjects": [], "result": {"status": "Failure", "message": str(exc)}}
    return {"convertedObjects": objects, "result": {"status": "Success"}}


def _converted(obj: Any, api_version: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ConversionError("an object to convert is not a JSON object")
    return convert(obj, api_version)


def url_conversion(url: str, ca_pem: bytes | None) -> dict[str, Any]:
    """``spec.conversion`` of a CRD converted by the webhook at ``url`` (not a Service: a
    ``kq dev`` or a test plane serving it on loopback beside the API server). Without
    ``ca_pem`` the caBundle is cleared, for ``kq run`` to put its CA there."""
    bundle = None if ca_pem is None else base64.b64encode(ca_pem).decode()
    client_config = {"url": url, "caBundle": bundle}
    return {
        "strategy": "Webhook",
        "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": client_config},
    }


def with_conversion(crd: dict[str, Any], conversion: dict[str, Any]) -> dict[str, Any]:
    """``crd`` (not mutated) with ``conversion`` if it is one of ``CONVERTED_CRDS``."""
    if crd.get("metadata", {}).get("name") not in CONVERTED_CRDS:
        return crd
    return {**crd, "spec": {**crd["spec"], "conversion": conversion}}
