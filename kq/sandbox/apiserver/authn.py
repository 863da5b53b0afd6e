"""Who a request comes from: the admin token, ServiceAccount tokens, impersonation.

The admin token (``kq dev``'s and ``kq apiserver``'s) is a member of ``system:masters``.
ServiceAccount tokens come from the TokenRequest API (``serviceaccounts/NAME/token``): JWTs
with kube-apiserver's claims, signed with HMAC-SHA256 under a key kept in the data directory,
and valid while their ServiceAccount (same uid) exists. ``Impersonate-*`` headers act as
another user once RBAC allows the ``impersonate`` verb on each requested name.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.rbac import (
    MASTERS,
    SERVICE_ACCOUNT_PREFIX,
    Attributes,
    User,
    forbidden,
)
from kq.sandbox.apiserver.store import Store

ISSUER = "https://kubernetes.default.svc"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
ADMIN = User("kq:admin", groups=(MASTERS, AUTHENTICATED))
SERVICE_ACCOUNTS = "/serviceaccounts"
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"
IMPERSONATE_UID = "Impersonate-Uid"
IMPERSONATE_EXTRA = "impersonate-extra-"


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def service_account_user(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")


class Signer:
    """Issues and checks ServiceAccount tokens under one secret key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def _sign(self, text: str) -> str:
        return _b64(hmac.new(self._key, text.encode(), hashlib.sha256).digest())

    def issue(self, sa: Mapping[str, Any], audiences: list[str], seconds: int) -> tuple[str, int]:
        """A token for the ServiceAccount ``sa``, and when it expires (Unix seconds)."""
        meta = sa["metadata"]
        issued = int(time.time())
        claims = {
            "aud": audiences,
            "exp": issued + seconds,
            "iat": issued,
            "iss": ISSUER,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": {
                "namespace": meta["namespace"],
                "serviceaccount": {"name": meta["name"], "uid": meta.get("uid", "")},
            },
            "nbf": issued,
            "sub": service_account_user(meta["namespace"], meta["name"]),
        }
        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = _b64(json.dumps(claims, separators=(",", ":")).encode())
        return f"{head}.{body}.{self._sign(f'{head}.{body}')}", issued + seconds

    def claims(self, token: str) -> dict[str, Any] | None:
        """The claims of a token this signer issued and that has not expired."""
        parts = token.split(".")
        # Bytes: compare_digest refuses str with characters outside ASCII.
        if len(parts) != 3 or not hmac.compare_digest(
            parts[2].encode(), self._sign(f"{parts[0]}.{parts[1]}").encode()
        ):
            return None
        try:
            claims = json.loads(_unb64(parts[1]))
        except ValueError:
            return None
        if not isinstance(claims, dict) or not isinstance(claims.get("exp"), int):
            return None
        return claims if claims["exp"] > time.time() else None


class Authenticator:
    """Bearer tokens to users."""

    def __init__(self, admin_token: str | None, store: Store, signer: Signer) -> None:
        self.admin_token = admin_token
        self._store = store
        self.signer = signer

    def user(self, token: str, audiences: list[str] | None = None) -> User | None:
        """The user ``token`` names, for ``audiences`` (the API server's by default)."""
        admin = self.admin_token
        if admin is not None and hmac.compare_digest(token.encode(), admin.encode()):
            return ADMIN
        claims = self.signer.claims(token)
        if claims is None:
            return None
        wanted = audiences or [ISSUER]
        if not set(wanted) & set(claims.get("aud") or ()):
            return None
        kube = claims.get("kubernetes.io") or {}
        namespace = kube.get("namespace", "")
        account = kube.get("serviceaccount") or {}
        sa = self._store.get(SERVICE_ACCOUNTS, namespace, account.get("name", ""))
        if sa is None or sa["metadata"].get("uid") != account.get("uid"):
            return None  # deleted, or deleted and made again: its old tokens die with it
        return User(
            service_account_user(namespace, sa["metadata"]["name"]),
            uid=sa["metadata"]["uid"],
            groups=(*service_account_groups(namespace), AUTHENTICATED),
            extra={CREDENTIAL_ID: (f"JTI={claims.get('jti', '')}",)},
        )


def impersonation_requested(headers: Mapping[str, str]) -> bool:
    return any(h.lower().startswith("impersonate-") for h in headers)


def impersonate(
    headers: Any, requester: User, allowed: Callable[[User, Attributes], tuple[bool, str]]
) -> User:
    """The user ``requester`` acts as through ``Impersonate-*`` headers, each request for a
    name checked against RBAC's ``impersonate`` verb (403 on the first refused)."""
    requested = _requests(headers)
    name, uid = "", ""
    groups: list[str] = []
    extra: dict[str, tuple[str, ...]] = {}
    explicit_groups = bool(headers.getall(IMPERSONATE_GROUP, []))
    for attrs in requested:
        ok, reason = allowed(requester, attrs)
        if not ok:
            raise forbidden(requester, attrs, reason)
        if attrs.resource == "serviceaccounts":
            name = service_account_user(attrs.namespace, attrs.name)
            if not explicit_groups:
                groups = list(service_account_groups(attrs.namespace))
        elif attrs.resource == "users":
            name = attrs.name
        elif attrs.resource == "groups":
            groups.append(attrs.name)
        elif attrs.resource == "uids":
            uid = attrs.name
        else:
            extra[attrs.subresource] = (*extra.get(attrs.subresource, ()), attrs.name)
    if name == ANONYMOUS:
        if UNAUTHENTICATED not in groups:
            groups.append(UNAUTHENTICATED)
    elif AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
        groups.append(AUTHENTICATED)
    return User(name, uid=uid, groups=tuple(groups), extra=extra)


def _requests(headers: Any) -> list[Attributes]:
    """One ``impersonate`` check per requested user, group, extra value and uid."""
    out: list[Attributes] = []
    user = headers.get(IMPERSONATE_USER, "")
    if user:
        namespace, _, sa = user.removeprefix(SERVICE_ACCOUNT_PREFIX).partition(":")
        if user.startswith(SERVICE_ACCOUNT_PREFIX) and namespace and sa and ":" not in sa:
            out.append(
                Attributes("impersonate", resource="serviceaccounts", namespace=namespace, name=sa)
            )
        else:
            out.append(Attributes("impersonate", resource="users", name=user))
    for group in headers.getall(IMPERSONATE_GROUP, []):
        out.append(Attributes("impersonate", resource="groups", name=group))
    for header, value in headers.items():
        if header.lower().startswith(IMPERSONATE_EXTRA):
            # Extra keys travel percent-encoded in header names (%2F for /).
            key = unquote(header[len(IMPERSONATE_EXTRA) :].lower())
            out.append(
                Attributes(
                    "impersonate",
                    group="authentication.k8s.io",
                    version="v1",
                    resource="userextras",
                    subresource=key,
                    name=value,
                )
            )
    uid = headers.get(IMPERSONATE_UID, "")
    if uid:
        out.append(
            Attributes(
                "impersonate",
                group="authentication.k8s.io",
                version="v1",
                resource="uids",
                name=uid,
            )
        )
    if out and not user:
        what = ", ".join(f"{a.resource} {a.name!r}" for a in out)
        raise ApiError(400, "BadRequest", f"requested {what} without impersonating a user")
    return out
