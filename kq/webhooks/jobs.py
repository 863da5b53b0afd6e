"""Mutating and validating webhooks for every job kind, on ``kq.jobframework.webhook``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kq.jobframework.interface import GenericJob
from kq.jobframework.queue_name import queue_name
from kq.jobframework.registry import by_gvk
from kq.jobframework.webhook import (
    WebhookFacts,
    default_on_create,
    format_errors,
    validate_on_create,
    validate_on_update,
)
from kq.webhooks.jsonpatch import diff
from kq.webhooks.review import Review, allowed, denied, patched, request_kind, request_of

FactsFor = Callable[[str, Mapping[str, Any]], WebhookFacts]
"""``(namespace, job) -> WebhookFacts``; the server answers it from its informer caches."""


def _no_facts(namespace: str, job: Mapping[str, Any]) -> WebhookFacts:
    return WebhookFacts()


class JobWebhooks:
    """``mutate`` and ``validate`` handlers for all ``integrations``; other kinds are allowed."""

    def __init__(self, integrations: Mapping[str, GenericJob], facts: FactsFor = _no_facts) -> None:
        self._by_gvk = by_gvk(integrations)
        self._facts = facts

    def mutate(self, review: Review) -> Review:
        """On CREATE, the JSONPatch that suspends a job kq will manage (or puts it in a queue)."""
        request = request_of(review)
        uid = str(request["uid"])
        integration = self._by_gvk.get(request_kind(request))
        # Most kinds are defaulted on create only; serving owners (upstream) on update too.
        on_update = getattr(integration, "DEFAULT_ON_UPDATE", False)
        operation = request.get("operation")
        if integration is None or not (
            operation == "CREATE" or (on_update and operation == "UPDATE")
        ):
            return allowed(uid)
        job = request.get("object") or {}
        facts = self._facts(str(request.get("namespace", "")), _typed(request, job))
        defaulted = default_on_create(
            integration,
            job,
            manage_jobs_without_queue_name=facts.manage_jobs_without_queue_name,
            namespace_managed=facts.namespace_managed,
            default_local_queue_exists=facts.default_local_queue_exists,
            ancestor_managed=facts.ancestor_managed,
            excluded=facts.excluded,
        )
        return patched(uid, diff(job, defaulted))

    def validate(self, review: Review) -> Review:
        """Denied with Kueue's field errors; warnings for the deprecated queue annotation."""
        request = request_of(review)
        uid = str(request["uid"])
        integration = self._by_gvk.get(request_kind(request))
        operation = request.get("operation")
        if integration is None or operation not in ("CREATE", "UPDATE"):
            return allowed(uid)
        job = request.get("object") or {}
        facts = self._facts(str(request.get("namespace", "")), _typed(request, job))
        manage = facts.manage_jobs_without_queue_name
        if operation == "CREATE":
            errors = validate_on_create(integration, job, manage_jobs_without_queue_name=manage)
        else:
            errors = validate_on_update(
                integration,
                request.get("oldObject") or {},
                job,
                manage_jobs_without_queue_name=manage,
                default_local_queue_exists=facts.default_local_queue_exists,
            )
        warning = queue_name(job).warning
        warnings = [warning] if warning is not None else []
        if errors:
            return denied(uid, format_errors(errors), warnings)
        return allowed(uid, warnings)


def _typed(request: Mapping[str, Any], obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` saying what it is, as the review's ``kind`` does (facts differ for pods)."""
    api_version, kind = request_kind(dict(request))
    return {**obj, "apiVersion": api_version, "kind": kind}
