"""Admission webhooks: Mutating/ValidatingWebhookConfiguration objects called over HTTPS."""

from __future__ import annotations

import base64
import json
import ssl
import uuid
from typing import Any

import aiohttp

from kq.sandbox.apiserver import errors
from kq.sandbox.apiserver.api import Api
from kq.sandbox.apiserver.authn import ADMIN
from kq.sandbox.apiserver.context import Ctx
from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.patch import PatchError, json_patch
from kq.sandbox.apiserver.registry import NAMESPACE, ResourceType
from kq.sandbox.apiserver.selectors import label_selector_from_object
from kq.sandbox.apiserver.store import Obj
from kq.sandbox.apiserver.tls_clients import client_context

_GROUP = "admissionregistration.k8s.io"
MUTATING = f"{_GROUP}/mutatingwebhookconfigurations"
VALIDATING = f"{_GROUP}/validatingwebhookconfigurations"


def _listed(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def rule_matches(rule: dict[str, Any], op: str, rt: ResourceType, sub: str) -> bool:
    resource = f"{rt.plural}/{sub}" if sub else rt.plural
    resources = rule.get("resources") or []
    wanted_resource = bool(
        resource in resources
        or "*/*" in resources
        or (not sub and "*" in resources)
        or (sub and f"*/{sub}" in resources)
        or (sub and f"{rt.plural}/*" in resources)
    )
    scope = rule.get("scope", "*")
    in_scope = scope == "*" or (scope == "Namespaced") == rt.namespaced
    return (
        _listed(rule.get("operations"), op)
        and _listed(rule.get("apiGroups"), rt.group)
        and _listed(rule.get("apiVersions"), rt.version)
        and wanted_resource
        and in_scope
    )


def _gvk(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _gvr(rt: ResourceType) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "resource": rt.plural}


class Webhooks:
    """The admission chain: every matching mutating webhook, then every validating one."""

    def __init__(self, api: Api) -> None:
        self.api = api
        # Kept open, as kube-apiserver keeps its connections to webhooks: a TLS handshake on
        # both ends of every call cost more than the call.
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def admit(self, op: str, rt: ResourceType, obj: Obj, old: Obj | None, ctx: Ctx) -> Obj:
        if rt.group == _GROUP:
            return obj
        for resource, mutating in ((MUTATING, True), (VALIDATING, False)):
            for config in self.api.store.select(resource):
                for hook in config.get("webhooks") or ():
                    target = self._target(hook, op, rt, ctx)
                    if target is None or not self._matches(hook, rt, obj, old, op):
                        continue
                    if target == rt:
                        obj = await self._call(hook, mutating, op, rt, obj, old, ctx)
                        continue
                    seen = await self._call(
                        hook,
                        mutating,
                        op,
                        target,
                        self.api.in_version(rt, obj, target.api_version),
                        None if old is None else self.api.in_version(rt, old, target.api_version),
                        ctx,
                        asked=rt,
                    )
                    if mutating:
                        obj = self.api.in_version(rt, seen, rt.api_version)
        return obj

    def _target(
        self, hook: dict[str, Any], op: str, rt: ResourceType, ctx: Ctx
    ) -> ResourceType | None:
        """The version ``hook`` is called with: the request's when a rule names it, else
        (matchPolicy Equivalent, the default) another served version of the same resource
        that a rule names, the object converted to it, as the real API server does."""
        rules = hook.get("rules") or ()
        if any(rule_matches(r, op, rt, ctx.subresource) for r in rules):
            return rt
        if hook.get("matchPolicy", "Equivalent") != "Equivalent":
            return None
        others = (o for o in self.api.registry.stored_as(rt.storage) if o != rt)
        return next(
            (o for o in others if any(rule_matches(r, op, o, ctx.subresource) for r in rules)),
            None,
        )

    def _matches(
        self, hook: dict[str, Any], rt: ResourceType, obj: Obj, old: Obj | None, op: str
    ) -> bool:
        subject = old if op == "DELETE" and old is not None else obj
        labels = subject.get("metadata", {}).get("labels") or {}
        if not label_selector_from_object(hook.get("objectSelector") or {}).matches(labels):
            return False
        ns_selector = label_selector_from_object(hook.get("namespaceSelector") or {})
        if rt == NAMESPACE:
            return ns_selector.matches(labels)
        if not rt.namespaced:
            return True
        namespace = self.api.store.get(
            NAMESPACE.storage, "", subject["metadata"].get("namespace", "")
        )
        ns_labels = (namespace or {}).get("metadata", {}).get("labels") or {}
        return ns_selector.matches(ns_labels)

    def _review(
        self, op: str, rt: ResourceType, obj: Obj, old: Obj | None, ctx: Ctx, asked: ResourceType
    ) -> dict[str, Any]:
        meta = obj.get("metadata", {})
        request: dict[str, Any] = {
            "uid": str(uuid.uuid4()),
            "kind": _gvk(rt),
            "resource": _gvr(rt),
            "requestKind": _gvk(asked),
            "requestResource": _gvr(asked),
            "name": meta.get("name", ""),
            "operation": op,
            "userInfo": ctx.user or ADMIN.info(),
            "object": None if op == "DELETE" else obj,
            "oldObject": old if op != "CREATE" else None,
            "dryRun": ctx.dry_run,
        }
        if ctx.subresource:
            request["subResource"] = ctx.subresource
        if rt.namespaced:
            request["namespace"] = meta.get("namespace", "")
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}

    async def _post(self, hook: dict[str, Any], review: dict[str, Any]) -> dict[str, Any]:
        try:
            body = await self._send(hook, review)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            if isinstance(exc, aiohttp.ClientConnectorError):
                raise  # a new connection refused: trying again at once would only repeat it
            # A kept connection that the webhook's server closed (it restarted or timed out
            # idle). Webhooks have no side effects, so one more try, on a new connection, is
            # safe; Go's transport does the same for kube-apiserver.
            body = await self._send(hook, review)
        if not isinstance(body, dict) or not isinstance(body.get("response"), dict):
            raise ValueError("the response carried no AdmissionReview response")
        result: dict[str, Any] = body["response"]
        return result

    async def _send(self, hook: dict[str, Any], review: dict[str, Any]) -> Any:
        client = hook.get("clientConfig") or {}
        url = client.get("url")
        if not url:
            raise ValueError("only clientConfig.url webhooks can be reached from kq")
        context = client_context(str(client.get("caBundle") or ""))
        limit = aiohttp.ClientTimeout(total=float(hook.get("timeoutSeconds", 10)))
        if self._session is None:
            self._session = aiohttp.ClientSession()
        post = self._session.post(url, json=review, ssl=context, timeout=limit)
        async with post as response:
            if response.status != 200:
                raise ValueError(f"the server responded with status {response.status}")
            return await response.json(content_type=None)

    async def _call(
        self,
        hook: dict[str, Any],
        mutating: bool,
        op: str,
        rt: ResourceType,
        obj: Obj,
        old: Obj | None,
        ctx: Ctx,
        asked: ResourceType | None = None,
    ) -> Obj:
        """Call ``hook`` with ``obj`` in ``rt``'s version; ``asked``: the request's resource
        type, when that is another version."""
        name = hook.get("name", "")
        try:
            review = self._review(op, rt, obj, old, ctx, asked or rt)
            response = await self._post(hook, review)
        except (aiohttp.ClientError, TimeoutError, ValueError, ssl.SSLError) as exc:
            if hook.get("failurePolicy", "Fail") == "Ignore":
                return obj
            detail = str(exc)
            if isinstance(exc, aiohttp.ClientConnectorError):
                detail = f"connect: {exc.os_error.strerror or exc.os_error}"
            url = (hook.get("clientConfig") or {}).get("url", "")
            raise ApiError(
                500,
                "InternalError",
                f'Internal error occurred: failed calling webhook "{name}": '
                f'failed to call webhook: Post "{url}": {detail}',
            ) from exc
        ctx.warnings.extend(str(w) for w in response.get("warnings") or ())
        if not response.get("allowed"):
            status = response.get("status") or {}
            message = status.get("message")
            denied = f'admission webhook "{name}" denied the request'
            code = int(status.get("code") or 403)
            raise ApiError(
                code,
                str(status.get("reason") or ("Forbidden" if code == 403 else "")),
                f"{denied}: {message}" if message else f"{denied} without explanation",
            )
        patch = response.get("patch")
        if not mutating or not patch or op == "DELETE":
            return obj
        try:
            operations = json.loads(base64.b64decode(patch))
            return json_patch(obj, operations)
        except (ValueError, PatchError) as exc:
            raise errors.ApiError(
                500,
                "InternalError",
                f'Internal error occurred: webhook "{name}" returned an invalid patch: {exc}',
            ) from exc
