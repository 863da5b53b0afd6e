"""Request limits as kube-apiserver has them: body size, nesting depth, object size, queries.

kube-apiserver reads at most 3 MiB of a request body, its JSON and YAML decoders stop at a
nesting depth of 10000, etcd refuses values over 1.5 MiB, and integer query parameters go
through Go's ``strconv.ParseInt``; each answer below is worded as that server words it.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

from aiohttp import web

from kq.sandbox.apiserver import errors
from kq.sandbox.apiserver.errors import ApiError

MAX_BODY = 3 * 1024 * 1024
MAX_OBJECT = 1536 * 1024  # etcd's default --max-request-bytes
# kube's decoders allow 10000 levels; Python's recursion limit (deep copies, the schema walk)
# does not, and no Kubernetes object nests anywhere near this deep.
MAX_DEPTH = 200

JSON_TYPES = ("application/json",)
YAML_TYPES = ("application/yaml",)
PROTOBUF = "application/vnd.kubernetes.protobuf"
BODY_TYPES = "application/json, application/yaml, application/vnd.kubernetes.protobuf"

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = bytes(range(256)).translate(None, b"{}[]")
_STEP = {ord("{"): 1, ord("["): 1, ord("}"): -1, ord("]"): -1}


def too_large() -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}")


def object_too_large() -> ApiError:
    # What etcd answers through kube-apiserver: a 500 with no reason.
    return ApiError(500, "", "etcdserver: request is too large")


def unsupported_body() -> ApiError:
    return errors.unsupported_media(
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{BODY_TYPES}"
    )


async def read_body(request: web.Request) -> bytes:
    """The whole body, or 413 past ``MAX_BODY`` (announced or streamed)."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise too_large()
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        raise too_large() from exc


def body_type(request: web.Request) -> str:
    """The body's media type; none given is JSON, as kube-apiserver takes it."""
    if "Content-Type" not in request.headers:
        return "application/json"
    return request.content_type


def _depth_error(kind: str, char: str, raw: bytes) -> ApiError:
    head = raw[:30].decode("utf-8", "replace")
    return errors.bad_request(
        f"the object provided is unrecognized (must be of type {kind}): couldn't get "
        f"version/kind; json parse error: invalid character '{char}' exceeded max depth "
        f"({head} ...)"
    )


def check_json_depth(raw: bytes, kind: str) -> None:
    """400 as kube-apiserver's when ``raw`` nests deeper than ``MAX_DEPTH``."""
    if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:
        return  # no deeper than its opening brackets, strings' included: most bodies
    brackets = _STRING.sub(b"", raw).translate(None, _BRACKETS)
    if len(brackets) <= 2 * MAX_DEPTH:
        return
    for index, depth in enumerate(accumulate(_STEP[b] for b in brackets)):
        if depth > MAX_DEPTH:
            raise _depth_error(kind, chr(brackets[index]), raw)


def check_depth(value: Any, kind: str, raw: bytes) -> None:
    """The same check on a decoded (YAML) document, without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise _depth_error(kind, "{" if isinstance(item, dict) else "[", raw)
        stack.extend((child, depth + 1) for child in children)


def yaml_too_deep(kind: str, raw: bytes) -> ApiError:
    return errors.bad_request(
        f"the object provided is unrecognized (must be of type {kind}): yaml: exceeded max "
        f"depth of {MAX_DEPTH} ({raw[:30].hex()} ...)"
    )


def parse_int(query: Any, name: str) -> int | None:
    """An integer query parameter as Go's ``strconv.ParseInt`` reads it (None: absent)."""
    text = query.get(name)
    if text is None or text == "":
        return None
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    return int(text)


def parse_resource_version(text: str) -> int | None:
    """A resourceVersion parameter; kube-apiserver answers a malformed one with a bare 500."""
    if text in ("", "0"):
        return None
    if not text.isdigit():
        raise ApiError(
            500,
            "",
            f'resourceVersion: Invalid value: "{text}": strconv.ParseUint: parsing '
            f'"{text}": invalid syntax',
        )
    return int(text)


def too_large_version(requested: int, current: int) -> ApiError:
    return ApiError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {requested}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )
