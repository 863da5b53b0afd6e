"""ConversionReview (apiextensions.k8s.io/v1): the API server asks for objects in another
version of kueue.x-k8s.io; ``kq.crds.conversion`` answers. ``review(review) -> review``, no I/O.

Served at ``/convert`` by ``kq run``'s webhook server, named in the CRDs' ``spec.conversion``.
"""

from __future__ import annotations

from typing import Any

from kq.crds.conversion import ConversionError, convert

API_VERSION = "apiextensions.k8s.io/v1"
KIND = "ConversionReview"
CONVERT = "/convert"

Review = dict[str, Any]


def review(conversion_review: Review) -> Review:
    """The answer to a ConversionReview: every object converted, or a failure saying why
    (the API server then fails the request that needed the conversion)."""
    request = conversion_review.get("request")
    if not isinstance(request, dict) or not request.get("uid"):
        raise ValueError("not a ConversionReview request: no request.uid")
    response: dict[str, Any] = {"uid": request["uid"]}
    wanted = str(request.get("desiredAPIVersion", ""))
    try:
        response["convertedObjects"] = [
            _converted(obj, wanted) for obj in request.get("objects") or ()
        ]
        response["result"] = {"status": "Success"}
    except ConversionError as exc:
        response["convertedObjects"] = []
        response["result"] = {"status": "Failure", "message": str(exc)}
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def _converted(obj: Any, api_version: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ConversionError("an object to convert is not a JSON object")
    return convert(obj, api_version)
