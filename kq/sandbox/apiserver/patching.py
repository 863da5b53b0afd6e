"""Patch bodies: the media types, and the object a JSON, merge or strategic patch makes."""

from __future__ import annotations

import json
from typing import Any

import yaml

from kq.sandbox.apiserver import errors
from kq.sandbox.apiserver.apply import ApplyConflict
from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.patch import PatchError, json_patch, merge_patch_sharing
from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.store import Obj
from kq.sandbox.apiserver.strategic import strategic_merge_patch

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE, STRATEGIC, APPLY)


def check_media(rt: ResourceType, content_type: str) -> None:
    """Custom resources take no strategic merge patch: they have no patch strategies."""
    if content_type == STRATEGIC and not rt.builtin:
        raise errors.unsupported_media(
            f"the body of the request was in an unknown format - accepted media types "
            f"include: {JSON_PATCH}, {MERGE}, {APPLY}"
        )


def patched(rt: ResourceType, live: Obj, content_type: str, raw: bytes) -> Any:
    """``live`` with the patch ``raw`` (not an apply patch) applied; a merge patch's result
    shares the subtrees it does not change with ``live``."""
    body = _decode_json(raw)
    try:
        if content_type == MERGE:
            return merge_patch_sharing(live, body)
        if content_type == JSON_PATCH:
            return json_patch(live, body)
        return strategic_merge_patch(live, body, rt.strategy_kind)
    except PatchError as exc:
        raise ApiError(exc.code, "BadRequest" if exc.code == 400 else "", str(exc)) from exc


def applied(raw: bytes) -> Any:
    """The object of an apply patch (YAML, or JSON which is YAML too)."""
    try:
        return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from exc


def apply_conflict(exc: ApplyConflict) -> ApiError:
    """The 409 of an apply that would take fields other managers own."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f'conflict with "{manager}": {path}',
            "field": path,
        }
        for manager, path in exc.conflicts
    ]
    return ApiError(409, "Conflict", str(exc), {"causes": causes})


def _decode_json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from exc
