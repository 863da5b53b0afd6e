"""/metrics as Kueue serves it: over HTTPS, to callers the API server vouches for.

A request's bearer token is checked with a TokenReview, and the caller's right to ``get`` the
non-resource URL ``/metrics`` with a SubjectAccessReview, as controller-runtime's
``WithAuthenticationAndAuthorization`` filter does. Answers are remembered for a short while,
so a Prometheus scraping every 15 s costs no API call most of the time.
"""

from __future__ import annotations

import hashlib
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kq.observability.metrics import REGISTRY
from kq.runtime import certs
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import Resource

log = structlog.get_logger("kq.runtime.metrics")

TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)
ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False
)
# controller-runtime's delegating authenticator and authorizer cache for these long.
ALLOWED_TTL_S = 60.0
DENIED_TTL_S = 10.0

Review = Callable[[str], Awaitable["Verdict"]]


@dataclass(frozen=True)
class Verdict:
    status: int  # 200, 401 or 403
    reason: str


class Gate:
    """Token → verdict, through the API server, cached by the token's hash."""

    def __init__(self, client: KubeClient, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._clock = clock
        self._cache: dict[str, tuple[float, Verdict]] = {}

    async def check(self, token: str) -> Verdict:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        verdict = await self._review(token)
        ttl = ALLOWED_TTL_S if verdict.status == 200 else DENIED_TTL_S
        self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
        self._cache[key] = (now + ttl, verdict)
        return verdict

    async def _review(self, token: str) -> Verdict:
        review = await self._client.create(
            TOKEN_REVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                            "metadata": {}, "spec": {"token": token}}
        )  # fmt: skip
        status = review.get("status") or {}
        if not status.get("authenticated"):
            return Verdict(401, "Unauthorized")
        user: dict[str, Any] = status.get("user") or {}
        access = await self._client.create(ACCESS_REVIEWS, _access_review(user))
        if not (access.get("status") or {}).get("allowed"):
            return Verdict(403, f"Forbidden (user={user.get('username', '')}, verb=get, "
                                "resource=, subresource=)")  # fmt: skip
        return Verdict(200, "OK")


def _access_review(user: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "user": user.get("username", ""),
        "groups": user.get("groups") or [],
        "uid": user.get("uid", ""),
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }
    if user.get("extra"):
        spec["extra"] = user["extra"]
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "metadata": {}, "spec": spec}  # fmt: skip


def build_app(review: Review | None) -> web.Application:
    """``review`` None serves /metrics to anyone (kq dev, on loopback)."""

    async def metrics(request: web.Request) -> web.Response:
        if review is not None:
            scheme, _, token = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not token:
                return web.Response(status=401, text="Unauthorized")
            try:
                verdict = await review(token)
            except ApiError as exc:
                log.warning("metrics request not reviewed: the API server failed", error=str(exc))
                return web.Response(status=500, text="Internal Server Error")
            if verdict.status != 200:
                return web.Response(status=verdict.status, text=verdict.reason)
        response = web.Response(body=generate_latest(REGISTRY))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    return app


def self_signed_context(names: list[str]) -> ssl.SSLContext:
    """A serving certificate made at start-up, as controller-runtime makes one when given none:
    scrapers either skip verification or trust the Service's own CA."""
    with tempfile.TemporaryDirectory() as directory:
        certs.generate(Path(directory), names)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(Path(directory) / "tls.crt", Path(directory) / "tls.key")
    return context
