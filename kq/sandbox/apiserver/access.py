"""The authentication and authorization step every request passes before it is served.

The admin token is checked first and, without impersonation headers, goes straight through:
the controller, the simulated cluster and the benchmarks pay one constant-time comparison
and no RBAC evaluation. Any other caller is authenticated, may impersonate, and is then
authorized on the request's attributes as kube-apiserver derives them (``RequestInfo``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kq.sandbox.apiserver.authn import ADMIN, Authenticator, impersonate, impersonation_requested
from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.rbac import Attributes, Authorizer, User, forbidden

_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
# Namespace subresources: /api/v1/namespaces/NAME/status is the Namespace's status.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
# Answered to anyone, as before RBAC: probes carry no token.
_OPEN = frozenset({"/healthz", "/readyz", "/livez"})
_FALSE = frozenset({"false", "0"})
_ANONYMOUS = User("system:anonymous", groups=("system:unauthenticated",))


def _named_by_field_selector(selector: str) -> str:
    for term in selector.split(","):
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and key.strip() == "metadata.name" and not key.endswith("!"):
            return value.strip()
    return ""


def attributes(method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """What a request does: upstream's ``RequestInfoFactory.NewRequestInfo``."""
    parts = [p for p in path.split("/") if p]
    plain = Attributes(method.lower(), resource_request=False, path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return plain
    group = ""
    rest = parts[1:]
    if parts[0] == "apis":
        if len(rest) < 3:
            return plain  # /apis/GROUP/VERSION is discovery
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    verb = _METHOD_VERBS.get(method, "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    sub = rest[2] if len(rest) >= 3 else ""
    if not name and verb == "get":
        watch = query.get("watch")
        verb = "watch" if watch is not None and watch.lower() not in _FALSE else "list"
        name = _named_by_field_selector(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(verb, True, group, version, resource, sub, namespace, name, path)


@dataclass
class Gate:
    """Authenticates a request, resolves impersonation, and authorizes it."""

    authenticator: Authenticator
    authorizer: Authorizer

    def user(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str]
    ) -> User:
        """Who may make this request, or the 401/403 ApiError saying why not."""
        header = headers.get("Authorization", "")
        token = header[7:] if header[:7].lower() == "bearer " else ""
        found = self.authenticator.user(token) if token else None
        if found is None:
            if path in _OPEN:
                return ADMIN if self.authenticator.admin_token is None else _ANONYMOUS
            if self.authenticator.admin_token is not None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            found = ADMIN  # a server started without a token trusts every caller
        if found is ADMIN and not impersonation_requested(headers):
            return found
        if impersonation_requested(headers):
            found = impersonate(headers, found, self.authorizer.authorize)
        if path in _OPEN:
            return found
        attrs = attributes(method, path, query)
        allowed, reason = self.authorizer.authorize(found, attrs)
        if not allowed:
            raise forbidden(found, attrs, reason)
        return found
