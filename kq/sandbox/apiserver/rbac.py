"""RBAC evaluated as kube-apiserver's ``--authorization-mode=RBAC`` does.

Bindings name subjects; the first rule of a role bound to the user that covers the request
allows it, and nothing denies. A ClusterRole with an ``aggregationRule`` holds the rules of
the ClusterRoles its selectors match, computed when asked (kube-controller-manager writes
them into the role; the sandbox has no controller manager). ``system:masters`` is allowed
everything without looking at any binding, as upstream's privileged-group authorizer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.selectors import SelectorError, label_selector_from_object
from kq.sandbox.apiserver.store import Obj, Store

GROUP = "rbac.authorization.k8s.io"
ROLES = f"{GROUP}/roles"
ROLE_BINDINGS = f"{GROUP}/rolebindings"
CLUSTER_ROLES = f"{GROUP}/clusterroles"
CLUSTER_ROLE_BINDINGS = f"{GROUP}/clusterrolebindings"
MASTERS = "system:masters"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class User:
    """Who made a request, as authentication found them."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def info(self) -> dict[str, Any]:
        """The ``UserInfo`` of reviews and AdmissionReviews."""
        out: dict[str, Any] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


@dataclass(frozen=True)
class Attributes:
    """What a request does, in RBAC's terms (upstream's ``authorizer.Attributes``)."""

    verb: str
    resource_request: bool = True
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def combined(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _has(values: Any, wanted: str, wildcard: str = "*") -> bool:
    return isinstance(values, list) and (wildcard in values or wanted in values)


def _resource_matches(resources: Any, attrs: Attributes) -> bool:
    if not isinstance(resources, list):
        return False
    if "*" in resources or attrs.combined in resources:
        return True
    # A rule for "*/status" covers the status of every resource.
    return bool(attrs.subresource) and f"*/{attrs.subresource}" in resources


def _url_matches(urls: Any, path: str) -> bool:
    if not isinstance(urls, list):
        return False
    for url in urls:
        if not isinstance(url, str):
            continue
        if url == "*" or url == path or (url.endswith("*") and path.startswith(url.rstrip("*"))):
            return True
    return False


def rule_allows(rule: Any, attrs: Attributes) -> bool:
    """Upstream's ``RuleAllows`` for one PolicyRule."""
    if not isinstance(rule, dict) or not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule.get("nonResourceURLs"), attrs.path)
    names = rule.get("resourceNames") or []
    return (
        _has(rule.get("apiGroups"), attrs.group)
        and _resource_matches(rule.get("resources"), attrs)
        and (not names or attrs.name in names)
    )


def _applies(subject: Any, user: User, namespace: str) -> bool:
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and user.name == f"{SERVICE_ACCOUNT_PREFIX}{sa_namespace}:{name}"
    return False


def _source(kind: str, binding: Obj, subject: dict[str, Any]) -> str:
    """Upstream's words for the binding that allowed a request."""
    meta, ref = binding["metadata"], binding.get("roleRef") or {}
    namespace = meta.get("namespace", "")
    name = f"{meta['name']}/{namespace}" if namespace else meta["name"]
    role = f'{ref.get("kind", "")} "{ref.get("name", "")}"'
    return f'{kind} "{name}" of {role} to {_describe(subject, namespace)}'


def _describe(subject: dict[str, Any], namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        name = f"{subject.get('name', '')}/{subject.get('namespace') or namespace}"
        return f'ServiceAccount "{name}"'
    return f'{subject.get("kind", "")} "{subject.get("name", "")}"'


class Authorizer:
    """Decides requests from the Roles, ClusterRoles and bindings in the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def authorize(self, user: User, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason): the binding that allowed it, or why no binding could."""
        if MASTERS in user.groups:
            return True, ""
        missing: list[str] = []
        for source, rules in self._bound(user, attrs.namespace, missing):
            if any(rule_allows(rule, attrs) for rule in rules):
                return True, f"RBAC: allowed by {source()}"
        if not missing:
            return False, ""
        joined = missing[0] if len(missing) == 1 else f"[{', '.join(missing)}]"
        return False, f"RBAC: {joined}"

    def rules_for(self, user: User, namespace: str) -> list[Any]:
        """Every rule bound to ``user`` in ``namespace`` (cluster-wide ones included)."""
        if MASTERS in user.groups:
            return [
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                {"verbs": ["*"], "nonResourceURLs": ["*"]},
            ]
        return [rule for _, rules in self._bound(user, namespace, []) for rule in rules]

    def _bound(
        self, user: User, namespace: str, missing: list[str]
    ) -> Iterator[tuple[Callable[[], str], list[Any]]]:
        """(describer, rules) of each binding whose subjects name ``user``, cluster-wide
        bindings first; a binding whose role is missing adds to ``missing``. The describer
        is called only for the binding that allows a request."""
        scopes: list[tuple[str, str | None, str]] = [
            (CLUSTER_ROLE_BINDINGS, None, "ClusterRoleBinding")
        ]
        if namespace:
            scopes.append((ROLE_BINDINGS, namespace, "RoleBinding"))
        for storage, scope, kind in scopes:
            for binding in self.store.select(storage, scope):
                found = self._subject(binding, user, namespace if scope else "")
                if found is None:
                    continue
                ref = binding.get("roleRef") or {}
                rules = self._role_rules(ref, namespace if scope else "", missing)
                if rules is None:
                    continue
                yield partial(_source, kind, binding, found), rules

    def _subject(self, binding: Obj, user: User, namespace: str) -> dict[str, Any] | None:
        for subject in binding.get("subjects") or ():
            if _applies(subject, user, namespace):
                return dict(subject)
        return None

    def _role_rules(self, ref: Any, namespace: str, missing: list[str]) -> list[Any] | None:
        kind, name = ref.get("kind"), ref.get("name", "")
        if kind == "Role" and namespace:
            role = self.store.get(ROLES, namespace, name)
            if role is None:
                missing.append(f'role.{GROUP} "{name}" not found')
                return None
            return list(role.get("rules") or ())
        if kind == "ClusterRole":
            cluster_role = self.store.get(CLUSTER_ROLES, "", name)
            if cluster_role is None:
                missing.append(f'clusterrole.{GROUP} "{name}" not found')
                return None
            return self.cluster_role_rules(cluster_role)
        missing.append(f"unsupported role reference kind: {kind!r}")
        return None

    def cluster_role_rules(self, role: Obj, seen: frozenset[str] = frozenset()) -> list[Any]:
        """A ClusterRole's rules; with an aggregationRule, those of the roles it selects
        (aggregates of aggregates too, as the controller's written rules would chain)."""
        aggregation = role.get("aggregationRule")
        if not isinstance(aggregation, dict):
            return list(role.get("rules") or ())
        seen = seen | {role["metadata"]["name"]}
        rules: list[Any] = []
        for selector in aggregation.get("clusterRoleSelectors") or ():
            try:
                chosen = label_selector_from_object(selector)
            except SelectorError:
                continue
            for other in self.store.select(CLUSTER_ROLES):
                labels = other["metadata"].get("labels") or {}
                if other["metadata"]["name"] in seen or not chosen.matches(labels):
                    continue
                found = self.cluster_role_rules(other, seen)
                rules.extend(r for r in found if r not in rules)
        return rules


def forbidden(user: User, attrs: Attributes, reason: str = "") -> ApiError:
    """kube-apiserver's 403 for a request RBAC did not allow."""
    if not attrs.resource_request:
        message = f'User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        where = (
            f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        )
        message = (
            f'User "{user.name}" cannot {attrs.verb} resource "{attrs.combined}" '
            f'in API group "{attrs.group}" {where}'
        )
    if reason:
        message = f"{message}: {reason}"
    if not attrs.resource_request:
        return ApiError(403, "Forbidden", f"forbidden: {message}", {})
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    details: dict[str, Any] = {"kind": attrs.resource}
    if attrs.group:
        details["group"] = attrs.group
    if attrs.name:
        details["name"] = attrs.name
        return ApiError(
            403, "Forbidden", f'{qualified} "{attrs.name}" is forbidden: {message}', details
        )
    return ApiError(403, "Forbidden", f"{qualified} is forbidden: {message}", details)
