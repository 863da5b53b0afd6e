"""RBAC's privilege-escalation prevention, as kube-apiserver's RBAC storage enforces it.

Whoever writes a Role or ClusterRole must already hold every permission in it (in the role's
namespace, or cluster-wide), unless RBAC lets them ``escalate`` roles; an aggregationRule needs
full authority. Whoever writes a binding must hold every permission of the role it references,
unless RBAC lets them ``bind`` that role. ``system:masters`` is exempt.
"""

from __future__ import annotations

from typing import Any

from kq.sandbox.apiserver import errors
from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.rbac import (
    CLUSTER_ROLES,
    GROUP,
    MASTERS,
    ROLES,
    Attributes,
    Authorizer,
    User,
)
from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.store import Obj

FULL_AUTHORITY = [
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
]
_ROLE_KINDS = {"Role": ("roles", ROLES), "ClusterRole": ("clusterroles", CLUSTER_ROLES)}
_BINDING_KINDS = frozenset({"RoleBinding", "ClusterRoleBinding"})


def _strings(rule: Any, key: str) -> list[str]:
    values = rule.get(key) if isinstance(rule, dict) else None
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def breakdown(rule: Any) -> list[dict[str, Any]]:
    """One rule per (group, resource, verb, name) and per (URL, verb), as upstream's
    ``BreakdownRule``."""
    verbs = _strings(rule, "verbs")
    names = _strings(rule, "resourceNames")
    out: list[dict[str, Any]] = [
        {"apiGroups": [g], "resources": [r], "verbs": [v], **({"resourceNames": [n]} if n else {})}
        for g in _strings(rule, "apiGroups")
        for r in _strings(rule, "resources")
        for v in verbs
        for n in (names or [""])
    ]
    out += [
        {"nonResourceURLs": [u], "verbs": [v]}
        for u in _strings(rule, "nonResourceURLs")
        for v in verbs
    ]
    return out


def _has_all(owner: list[str], wanted: list[str]) -> bool:
    return "*" in owner or set(wanted) <= set(owner)


def _resources_covered(owner: list[str], wanted: list[str]) -> bool:
    if "*" in owner:
        return True
    return all(r in owner or ("/" in r and f"*/{r.split('/', 1)[1]}" in owner) for r in wanted)


def _url_covered(owner: list[str], path: str) -> bool:
    return any(o == path or (o.endswith("*") and path.startswith(o.rstrip("*"))) for o in owner)


def covers(owner: Any, sub: dict[str, Any]) -> bool:
    """Upstream's ``ruleCovers``: does ``owner`` grant all of the atomic rule ``sub``?"""
    names, owned_names = _strings(sub, "resourceNames"), _strings(owner, "resourceNames")
    return (
        _has_all(_strings(owner, "verbs"), sub["verbs"])
        and _has_all(_strings(owner, "apiGroups"), _strings(sub, "apiGroups"))
        and _resources_covered(_strings(owner, "resources"), _strings(sub, "resources"))
        and all(
            _url_covered(_strings(owner, "nonResourceURLs"), u)
            for u in _strings(sub, "nonResourceURLs")
        )
        and (not owned_names if not names else (not owned_names or set(names) <= set(owned_names)))
    )


def uncovered(owner_rules: list[Any], rules: list[Any]) -> list[dict[str, Any]]:
    """The atomic rules of ``rules`` no owner rule covers."""
    return [
        sub
        for rule in rules
        for sub in breakdown(rule)
        if not any(covers(owner, sub) for owner in owner_rules)
    ]


def _compact(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Verbs of one (group, resource, name) merged into one rule, as ``CompactRules``."""
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    others = []
    for rule in rules:
        if "nonResourceURLs" in rule:
            others.append(rule)
            continue
        key = (rule["apiGroups"][0], rule["resources"][0], (rule.get("resourceNames") or [""])[0])
        if key in merged:
            merged[key]["verbs"] = merged[key]["verbs"] + rule["verbs"]
        else:
            merged[key] = dict(rule)
    return [*others, *merged.values()]


def _quoted(values: list[str]) -> str:
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


def describe(rule: dict[str, Any]) -> str:
    """Upstream's ``CompactString``: ``{APIGroups:["batch"], Resources:["jobs"], Verbs:[...]}``."""
    keys = (("APIGroups", "apiGroups"), ("Resources", "resources"),
            ("NonResourceURLs", "nonResourceURLs"), ("ResourceNames", "resourceNames"),
            ("Verbs", "verbs"))  # fmt: skip
    parts = [f"{label}:{_quoted(rule[key])}" for label, key in keys if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


class Escalation:
    """Refuses RBAC writes that would grant their writer more than they hold."""

    def __init__(self, authorizer: Authorizer) -> None:
        self._authorizer = authorizer

    def check(self, op: str, rt: ResourceType, obj: Obj, info: dict[str, Any] | None) -> None:
        if rt.group != GROUP or op not in ("CREATE", "UPDATE") or info is None:
            return
        user = User(str(info.get("username", "")), groups=tuple(info.get("groups") or ()))
        if MASTERS in user.groups:
            return
        meta = obj.get("metadata") or {}
        name, namespace = meta.get("name", ""), meta.get("namespace", "")
        if rt.kind in _ROLE_KINDS:
            self._role(rt, obj, user, name if op == "UPDATE" else "", namespace)
        elif rt.kind in _BINDING_KINDS:
            self._binding(rt, obj, user, namespace)

    def _allowed(self, user: User, verb: str, resource: str, name: str, namespace: str) -> bool:
        attrs = Attributes(verb, True, GROUP, "*", resource, "", namespace, name)
        return self._authorizer.authorize(user, attrs)[0]

    def _role(self, rt: ResourceType, obj: Obj, user: User, name: str, namespace: str) -> None:
        if self._allowed(user, "escalate", rt.plural, name, namespace):
            return
        self._confirm(rt, obj, user, list(obj.get("rules") or ()), namespace)
        if obj.get("aggregationRule") and uncovered(
            self._authorizer.rules_for(user, namespace), FULL_AUTHORITY
        ):
            raise _forbidden(
                rt, obj, "must have cluster-admin privileges to use the aggregationRule"
            )

    def _binding(self, rt: ResourceType, obj: Obj, user: User, namespace: str) -> None:
        ref = obj.get("roleRef") or {}
        kind, role_name = ref.get("kind", ""), ref.get("name", "")
        if kind not in _ROLE_KINDS:
            return  # validation refuses it
        plural, storage = _ROLE_KINDS[kind]
        if self._allowed(user, "bind", plural, role_name, namespace):
            return
        role = self._authorizer.store.get(storage, namespace if kind == "Role" else "", role_name)
        if role is None:
            raise errors.not_found(GROUP, plural, role_name)
        rules = (
            self._authorizer.cluster_role_rules(role)
            if kind == "ClusterRole"
            else list(role.get("rules") or ())
        )
        self._confirm(rt, obj, user, rules, namespace)

    def _confirm(
        self, rt: ResourceType, obj: Obj, user: User, rules: list[Any], namespace: str
    ) -> None:
        missing = uncovered(self._authorizer.rules_for(user, namespace), rules)
        if not missing:
            return
        listed = "\n".join(sorted({describe(r) for r in _compact(missing)}))
        raise _forbidden(
            rt, obj,
            f'user "{user.name}" (groups={_quoted(list(user.groups))}) is attempting to grant '
            f"RBAC permissions not currently held:\n{listed}",
        )  # fmt: skip


def _forbidden(rt: ResourceType, obj: Obj, why: str) -> ApiError:
    name = (obj.get("metadata") or {}).get("name", "")
    details = {"name": name, "group": GROUP, "kind": rt.plural}
    return ApiError(403, "Forbidden", f'{rt.plural}.{GROUP} "{name}" is forbidden: {why}', details)
