"""The review APIs (``authentication.k8s.io``, ``authorization.k8s.io``) and TokenRequest.

Reviews are created and answered, never stored: TokenReview and SelfSubjectReview say who a
token or the caller is; SubjectAccessReview, LocalSubjectAccessReview and
SelfSubjectAccessReview ask RBAC (``kubectl auth can-i``); SelfSubjectRulesReview lists the
caller's rules (``kubectl auth can-i --list``). ``serviceaccounts/NAME/token`` issues a
ServiceAccount token (``kubectl create token``).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from kq.sandbox.apiserver import errors
from kq.sandbox.apiserver.authn import ISSUER, SERVICE_ACCOUNTS, Authenticator
from kq.sandbox.apiserver.rbac import Attributes, Authorizer, User
from kq.sandbox.apiserver.schema import FieldError
from kq.sandbox.apiserver.store import Store

AUTHENTICATION = "authentication.k8s.io"
AUTHORIZATION = "authorization.k8s.io"
KINDS = {
    (AUTHENTICATION, "tokenreviews"): "TokenReview",
    (AUTHENTICATION, "selfsubjectreviews"): "SelfSubjectReview",
    (AUTHORIZATION, "subjectaccessreviews"): "SubjectAccessReview",
    (AUTHORIZATION, "localsubjectaccessreviews"): "LocalSubjectAccessReview",
    (AUTHORIZATION, "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
    (AUTHORIZATION, "selfsubjectrulesreviews"): "SelfSubjectRulesReview",
}
MIN_TOKEN_SECONDS = 600
MAX_TOKEN_SECONDS = 1 << 32


def review_path(parts: list[str]) -> tuple[str, str, str] | None:
    """(group, resource, namespace) when ``parts`` name a review collection."""
    if len(parts) < 4 or parts[0] != "apis" or parts[2] != "v1":
        return None
    group, rest = parts[1], parts[3:]
    namespace = ""
    if len(rest) == 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if len(rest) != 1 or (group, rest[0]) not in KINDS:
        return None
    if (rest[0] == "localsubjectaccessreviews") != bool(namespace):
        return None
    return group, rest[0], namespace


def token_path(parts: list[str]) -> tuple[str, str] | None:
    """(namespace, name) when ``parts`` are ``/api/v1/namespaces/NS/serviceaccounts/NAME/token``."""
    if (
        len(parts) == 7
        and parts[:3] == ["api", "v1", "namespaces"]
        and parts[4:7:2]
        == [
            "serviceaccounts",
            "token",
        ]
    ):
        return parts[3], parts[5]
    return None


def _invalid(
    kind: str, group: str, field: str, value: Any, why: str, name: str = ""
) -> errors.ApiError:
    shown = json.dumps(value, sort_keys=True)
    error = FieldError(field, "FieldValueInvalid", f"Invalid value: {shown}: {why}")
    return errors.invalid(group, kind, name, [error])


def _spec(body: Any, kind: str) -> dict[str, Any]:
    if not isinstance(body, dict) or body.get("kind") not in (None, kind):
        raise errors.bad_request(f"the request body must be a {kind}")
    spec = body.get("spec") or {}
    if not isinstance(spec, dict):
        raise errors.bad_request(f"{kind}.spec must be an object")
    return spec


def _access_attributes(spec: dict[str, Any], kind: str) -> Attributes:
    resource, plain = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and plain is not None:
        raise _invalid(
            kind, AUTHORIZATION, "spec.nonResourceAttributes", plain,
            "cannot be specified in combination with resourceAttributes",
        )  # fmt: skip
    if resource is None and plain is None:
        raise _invalid(
            kind, AUTHORIZATION, "spec.resourceAttributes", None,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )  # fmt: skip
    given = resource if resource is not None else plain
    if not isinstance(given, dict):
        raise errors.bad_request(f"{kind}.spec: the attributes must be an object")
    field = {k: str(v) for k, v in given.items() if isinstance(v, str)}.get
    if plain is not None:
        return Attributes(field("verb", ""), resource_request=False, path=field("path", ""))
    return Attributes(
        field("verb", ""),
        True,
        field("group", ""),
        field("version", ""),
        field("resource", ""),
        field("subresource", ""),
        field("namespace", ""),
        field("name", ""),
    )


def _echo(body: Any, kind: str, group: str, status: dict[str, Any]) -> dict[str, Any]:
    out = dict(body) if isinstance(body, dict) else {}
    out.update(apiVersion=f"{group}/v1", kind=kind, status=status)
    out.setdefault("metadata", {})
    out["metadata"].setdefault("creationTimestamp", None)
    return out


class Reviews:
    """Answers reviews from the server's authenticator and authorizer."""

    def __init__(self, store: Store, authenticator: Authenticator, authorizer: Authorizer) -> None:
        self._store = store
        self._authenticator = authenticator
        self._authorizer = authorizer

    def answer(self, resource: str, namespace: str, body: Any, caller: User) -> dict[str, Any]:
        group = (
            AUTHENTICATION if resource in ("tokenreviews", "selfsubjectreviews") else AUTHORIZATION
        )
        kind = KINDS[(group, resource)]
        if resource == "selfsubjectreviews":
            return _echo(body, kind, group, {"userInfo": caller.info()})
        spec = _spec(body, kind)
        if resource == "tokenreviews":
            return _echo(body, kind, group, self._token_review(spec))
        if resource == "selfsubjectrulesreviews":
            return _echo(body, kind, group, self._rules(caller, str(spec.get("namespace", ""))))
        attrs = _access_attributes(spec, kind)
        if resource == "localsubjectaccessreviews" and attrs.namespace != namespace:
            raise _invalid(
                kind, group, "spec.resourceAttributes.namespace", attrs.namespace,
                "must match metadata.namespace",
            )  # fmt: skip
        user = caller if resource == "selfsubjectaccessreviews" else _subject(spec, kind)
        allowed, reason = self._authorizer.authorize(user, attrs)
        status: dict[str, Any] = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return _echo(body, kind, group, status)

    def _token_review(self, spec: dict[str, Any]) -> dict[str, Any]:
        audiences = _strings(spec, "audiences", "TokenReview")
        user = self._authenticator.user(str(spec.get("token", "")), audiences or None)
        if user is None:
            return {
                "user": {},
                "error": "[invalid bearer token, service account token is not valid]",
            }
        return {"authenticated": True, "user": user.info(), "audiences": audiences or [ISSUER]}

    def _rules(self, caller: User, namespace: str) -> dict[str, Any]:
        resource, plain = [], []
        for rule in self._authorizer.rules_for(caller, namespace):
            if not isinstance(rule, dict):
                continue
            if rule.get("nonResourceURLs"):
                plain.append(
                    {"verbs": rule.get("verbs") or [], "nonResourceURLs": rule["nonResourceURLs"]}
                )
            else:
                keys = ("verbs", "apiGroups", "resources", "resourceNames")
                resource.append({k: rule[k] for k in keys if rule.get(k)})
        return {"resourceRules": resource, "nonResourceRules": plain, "incomplete": False}

    def token(self, namespace: str, name: str, body: Any) -> dict[str, Any]:
        """A TokenRequest for ServiceAccount ``namespace/name``, answered with its token;
        checked in upstream's order: names, the ServiceAccount, then the spec."""
        spec = dict(_spec(body, "TokenRequest"))
        meta = body.get("metadata") or {}
        for key, value in (("name", name), ("namespace", namespace)):
            if meta.get(key) and meta[key] != value:
                raise _invalid(
                    "TokenRequest", AUTHENTICATION, f"metadata.{key}", meta[key],
                    f"must match the service account {key} if specified", name,
                )  # fmt: skip
        sa = self._store.get(SERVICE_ACCOUNTS, namespace, name)
        if sa is None:
            raise errors.not_found("", "serviceaccounts", name)
        seconds = spec.setdefault("expirationSeconds", 3600)
        if not isinstance(seconds, int) or seconds < MIN_TOKEN_SECONDS:
            raise _invalid(
                "TokenRequest", AUTHENTICATION, "spec.expirationSeconds", seconds,
                "may not specify a duration less than 10 minutes",
            )  # fmt: skip
        if seconds > MAX_TOKEN_SECONDS:
            raise _invalid(
                "TokenRequest", AUTHENTICATION, "spec.expirationSeconds", seconds,
                "may not specify a duration larger than 2^32 seconds",
            )  # fmt: skip
        if spec.get("boundObjectRef"):
            raise errors.bad_request(
                "spec.boundObjectRef: the embedded API server issues no object-bound tokens"
            )
        audiences = _strings(spec, "audiences", "TokenRequest") or [ISSUER]
        spec["audiences"] = audiences
        token, expires = self._authenticator.signer.issue(sa, audiences, seconds)
        return {
            "kind": "TokenRequest",
            "apiVersion": f"{AUTHENTICATION}/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": _stamp(None)},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": _stamp(expires)},
        }


def _stamp(when: float | None) -> str:
    moment = dt.datetime.now(dt.UTC) if when is None else dt.datetime.fromtimestamp(when, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _strings(parent: dict[str, Any], key: str, kind: str) -> list[str]:
    """``parent[key]``, a list of strings (or absent); anything else is a 400."""
    value = parent.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise errors.bad_request(f"{kind}: {key} must be a list of strings")
    return value


def _subject(spec: dict[str, Any], kind: str) -> User:
    """The user a SubjectAccessReview asks about (no group is added, as upstream)."""
    name, groups = str(spec.get("user", "")), _strings(spec, "groups", kind)
    if not name and not groups:
        raise _invalid(
            kind,
            AUTHORIZATION,
            "spec.user",
            name,
            "at least one of user or group must be specified",
        )
    extra = spec.get("extra") or {}
    if not isinstance(extra, dict):
        raise errors.bad_request(f"{kind}.spec.extra must be a map of string lists")
    return User(
        name,
        uid=str(spec.get("uid", "")),
        groups=tuple(str(g) for g in groups),
        extra={str(k): tuple(_strings(extra, k, kind)) for k in extra},
    )
