"""The URL path of every handler, for the webhook server and its webhook configurations."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kq.webhooks.jobs import JobWebhooks
from kq.webhooks.kueue import validate_kueue
from kq.webhooks.review import Handler

MUTATE_JOBS = "/mutate/jobs"
VALIDATE_JOBS = "/validate/jobs"
VALIDATE_KUEUE = "/validate/kueue"


def routes(jobs: JobWebhooks, kueue: Handler = validate_kueue) -> dict[str, Handler]:
    return {
        MUTATE_JOBS: jobs.mutate,
        VALIDATE_JOBS: jobs.validate,
        VALIDATE_KUEUE: kueue,
    }


ServerHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def for_server(handler: Handler) -> ServerHandler:
    """``handler`` as ``kq.runtime.webhook.WebhookServer`` calls it: the request in, the
    response's fields out (the server adds the envelope and the uid)."""

    async def handle(request: dict[str, Any]) -> dict[str, Any]:
        response = dict(handler({"request": request})["response"])
        del response["uid"]
        return response

    return handle
