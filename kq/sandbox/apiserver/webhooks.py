"""Admission webhooks: Mutating/ValidatingWebhookConfiguration objects called over HTTPS."""

from __future__ import annotations

import base64
import json
import ssl
import uuid
from typing import Any

import aiohttp

from kq.sandbox.apiserver import errors
from kq.sandbox.apiserver.api import Api, Ctx
from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.patch import PatchError, json_patch
from kq.sandbox.apiserver.registry import NAMESPACE, ResourceType
from kq.sandbox.apiserver.selectors import label_selector_from_object
from kq.sandbox.apiserver.store import Obj

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


class Webhooks:
    """The admission chain: every matching mutating webhook, then every validating one."""

    def __init__(self, api: Api) -> None:
        self.api = api

    async def admit(self, op: str, rt: ResourceType, obj: Obj, old: Obj | None, ctx: Ctx) -> Obj:
        if rt.group == _GROUP:
            return obj
        for resource, mutating in ((MUTATING, True), (VALIDATING, False)):
            for config in self.api.store.select(resource):
                for hook in config.get("webhooks") or ():
                    if self._matches(hook, op, rt, obj, old, ctx):
                        obj = await self._call(hook, mutating, op, rt, obj, old, ctx)
        return obj

    def _matches(
        self, hook: dict[str, Any], op: str, rt: ResourceType, obj: Obj, old: Obj | None, ctx: Ctx
    ) -> bool:
        if not any(rule_matches(r, op, rt, ctx.subresource) for r in hook.get("rules") or ()):
            return False
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
        self, op: str, rt: ResourceType, obj: Obj, old: Obj | None, ctx: Ctx
    ) -> dict[str, Any]:
        meta = obj.get("metadata", {})
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        gvr = {"group": rt.group, "version": rt.version, "resource": rt.plural}
        request: dict[str, Any] = {
            "uid": str(uuid.uuid4()),
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": meta.get("name", ""),
            "operation": op,
            "userInfo": {"username": "kq:admin", "groups": ["system:masters"]},
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
        client = hook.get("clientConfig") or {}
        url = client.get("url")
        if not url:
            raise ValueError("only clientConfig.url webhooks can be reached from kq")
        context = ssl.create_default_context()
        if client.get("caBundle"):
            context.load_verify_locations(cadata=base64.b64decode(client["caBundle"]).decode())
        timeout = aiohttp.ClientTimeout(total=float(hook.get("timeoutSeconds", 10)))
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, json=review, ssl=context) as response,
        ):
            if response.status != 200:
                raise ValueError(f"the server responded with status {response.status}")
            body = await response.json(content_type=None)
        if not isinstance(body, dict) or not isinstance(body.get("response"), dict):
            raise ValueError("the response carried no AdmissionReview response")
        result: dict[str, Any] = body["response"]
        return result

    async def _call(
        self,
        hook: dict[str, Any],
        mutating: bool,
        op: str,
        rt: ResourceType,
        obj: Obj,
        old: Obj | None,
        ctx: Ctx,
    ) -> Obj:
        name = hook.get("name", "")
        try:
            response = await self._post(hook, self._review(op, rt, obj, old, ctx))
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
