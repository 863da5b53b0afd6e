"""What goes over the wire to the API server: the kind a request path names, JSON bodies
in and out (an error body decoded into an ``ApiError``), request targets escaped, and a watch's
lines however long."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from kq import jsoncodec
from kq.runtime.backoff import parse_retry_after
from kq.runtime.errors import ApiError

Object = dict[str, Any]


def kind_key(path: str) -> str:
    """``plural.group`` (``plural`` for the core group) of a request path; the path otherwise.

    >>> kind_key("/apis/kueue.x-k8s.io/v1beta1/namespaces/a/workloads/w/status")
    'workloads.kueue.x-k8s.io'
    """
    parts = path.split("?", 1)[0].strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return path
    plural = rest[2] if rest[0] == "namespaces" and len(rest) >= 3 else rest[0]
    return f"{plural}.{group}" if group else plural


def decode(status: int, headers: dict[str, str], raw: bytes, method: str, path: str) -> Object:
    """The body of a success as a dict; anything else as an ``ApiError``."""
    body: object
    try:
        body = jsoncodec.loads(raw) if raw else {}
    except ValueError:
        body = None
    if status < 300 and isinstance(body, dict):
        return body
    code = status if status >= 300 else 0
    retry_after = parse_retry_after(headers.get("retry-after"))
    if isinstance(body, dict):
        raise ApiError(
            code,
            str(body.get("message", "")),
            reason=str(body.get("reason", "")),
            body=body,
            retry_after=retry_after,
        )
    # A proxy's HTML error page, or garbage in a 2xx: both mean the transport failed us.
    snippet = raw[:80].decode("utf-8", "replace")
    raise ApiError(code, f"{method} {path}: not JSON: {snippet!r}", retry_after=retry_after)


def encode(body: Object) -> bytes:
    return jsoncodec.dumps(body)


# Characters a request target keeps as they are (RFC 3986 pchar, '/', and existing escapes).
PATH_SAFE = "/%:@!$&'()*+,;=-._~"
UNSAFE_IN_PATH = re.compile(r"[^A-Za-z0-9/%:@!$&'()*+,;=\-._~]").search


MAX_LINE = 128 * 1024 * 1024
"""Longest watch event read; kube-apiserver's objects stay under 3 MiB (its body limit)."""


async def watch_lines(content: aiohttp.StreamReader, path: str) -> AsyncIterator[bytes]:
    """The stream's lines, each whole however long: aiohttp's own line reader gives up at its
    buffer size (2 MiB here) with an exception that is no ClientError."""
    pending = bytearray()
    async for chunk in content.iter_any():
        pending += chunk
        if b"\n" not in chunk:
            if len(pending) > MAX_LINE:
                raise ApiError(0, f"GET {path}: a watch event over {MAX_LINE} bytes")
            continue
        *complete, rest = bytes(pending).split(b"\n")
        for line in complete:
            yield line + b"\n"
        pending = bytearray(rest)
    if pending:
        yield bytes(pending)
