"""Who this process is to the API server (a SelfSubjectReview), e.g. to tell its writes apart."""

from __future__ import annotations

import structlog

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import Resource

log = structlog.get_logger("kq.runtime.identity")

SELF_SUBJECT_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False
)


async def whoami(client: KubeClient) -> str | None:
    """kq's user name; None where the API server answers no SelfSubjectReview (the embedded
    server, which has no users)."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {}}
    try:
        review = await client.create(SELF_SUBJECT_REVIEWS, body)
    except ApiError as exc:
        if exc.status in (403, 404):
            return None
        raise
    user = ((review.get("status") or {}).get("userInfo") or {}).get("username")
    return str(user) if user else None
