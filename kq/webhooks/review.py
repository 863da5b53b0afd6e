"""AdmissionReview requests and responses."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from typing import Any

from kq.webhooks.jsonpatch import Operation

Review = dict[str, Any]
Handler = Callable[[Review], Review]
API_VERSION = "admission.k8s.io/v1"


def request_of(review: Review) -> dict[str, Any]:
    request = review.get("request")
    if not isinstance(request, dict) or not request.get("uid"):
        raise ValueError("not an AdmissionReview request: no request.uid")
    return request


def request_kind(request: dict[str, Any]) -> tuple[str, str]:
    """``(apiVersion, kind)`` of the object under review."""
    kind = request.get("kind") or {}
    group, version = str(kind.get("group", "")), str(kind.get("version", ""))
    return (f"{group}/{version}" if group else version), str(kind.get("kind", ""))


def _review(response: dict[str, Any]) -> Review:
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def allowed(uid: str, warnings: Sequence[str] = ()) -> Review:
    response: dict[str, Any] = {"uid": uid, "allowed": True, "status": {"code": 200}}
    if warnings:
        response["warnings"] = list(warnings)
    return _review(response)


def patched(uid: str, patch: Sequence[Operation]) -> Review:
    """Allowed, with ``patch`` when there is one (an empty JSONPatch is not sent)."""
    review = allowed(uid)
    if patch:
        review["response"]["patchType"] = "JSONPatch"
        review["response"]["patch"] = base64.b64encode(json.dumps(list(patch)).encode()).decode()
    return review


def denied(uid: str, message: str, warnings: Sequence[str] = ()) -> Review:
    """Refused as controller-runtime refuses on a validation error: 403 Forbidden."""
    review = allowed(uid, warnings)
    review["response"].update(
        allowed=False, status={"code": 403, "reason": "Forbidden", "message": message}
    )
    return review
