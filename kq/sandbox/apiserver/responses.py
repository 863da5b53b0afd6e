"""JSON responses with kube-apiserver's ``Warning`` headers."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kq import jsoncodec

JSON = "application/json"


def dump(obj: Any) -> bytes:
    return jsoncodec.dumps(obj)


def respond(obj: Any, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    return respond_json(dump(obj), status, warnings)


def respond_json(body: bytes, status: int = 200, warnings: list[str] | None = None) -> web.Response:
    """``respond`` with ``body`` already encoded."""
    response = web.Response(body=body, status=status, content_type=JSON)
    for warning in warnings or ():
        escaped = warning.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{escaped}"')
    return response
