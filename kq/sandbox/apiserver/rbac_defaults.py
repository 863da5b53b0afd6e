"""The default ClusterRoles and bindings kube-apiserver creates at start-up.

The subset that matters to a sandbox: ``cluster-admin`` for ``system:masters``; discovery,
self-reviews and health for every authenticated user; ``admin``/``edit``/``view`` as
aggregates (what ``deploy/visibility.yaml`` adds to), with the aggregated rules of the
built-in kinds the embedded server serves; in kube-system, the Role that lets an aggregated
API server read the authentication ConfigMap. Created when missing, never overwritten.
"""

from __future__ import annotations

from typing import Any

from kq.sandbox.apiserver.rbac import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, GROUP, ROLES
from kq.sandbox.apiserver.store import Store

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"
_META_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
AUTHENTICATION_CONFIG = "extension-apiserver-authentication"


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


def _urls(verbs: list[str], urls: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "nonResourceURLs": urls}


def _role(name: str, rules: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    labels = {**_META_LABELS, **extra.pop("labels", {})}
    meta = {"name": name, "labels": labels, "annotations": dict(_AUTOUPDATE)}
    role: dict[str, Any] = {"apiVersion": f"{GROUP}/v1", "kind": "ClusterRole", "metadata": meta}
    if "aggregate" in extra:
        selector = {"matchLabels": {f"{AGGREGATE}{extra['aggregate']}": "true"}}
        role["aggregationRule"] = {"clusterRoleSelectors": [selector]}
    else:
        role["rules"] = rules or []
    return role


def _binding(name: str, groups: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": dict(_META_LABELS), "annotations": dict(_AUTOUPDATE)},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups],
    }


def _aggregated() -> list[dict[str, Any]]:
    """``system:aggregate-to-*``: upstream's rules, for the kinds the embedded server has."""
    view = [
        _rule(READ, [""], ["pods", "serviceaccounts", "services", "services/status",
                           "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps",
                           "limitranges", "resourcequotas", "events", "pods/status",
                           "resourcequotas/status", "namespaces/status", "pods/log", "namespaces"]),
        _rule(READ, ["apps"], ["statefulsets", "statefulsets/status", "statefulsets/scale",
                               "daemonsets", "daemonsets/status", "deployments",
                               "deployments/status", "deployments/scale", "replicasets",
                               "replicasets/status", "replicasets/scale"]),
        _rule(READ, ["batch"], ["jobs", "cronjobs", "cronjobs/status", "jobs/status"]),
        _rule(READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    ]  # fmt: skip
    edit = [
        _rule(READ, [""], ["secrets"]),
        _rule(["impersonate"], [""], ["serviceaccounts"]),
        _rule(WRITE, [""], ["pods", "serviceaccounts", "services", "persistentvolumeclaims",
                            "configmaps", "secrets", "events"]),
        _rule(["create"], [""], ["pods/eviction", "serviceaccounts/token"]),
        _rule(WRITE, ["apps"], ["statefulsets", "statefulsets/scale", "daemonsets", "deployments",
                                "deployments/scale", "replicasets", "replicasets/scale"]),
        _rule(WRITE, ["batch"], ["jobs", "cronjobs"]),
        _rule(WRITE, ["policy"], ["poddisruptionbudgets"]),
        _rule(READ + WRITE, ["coordination.k8s.io"], ["leases"]),
    ]  # fmt: skip
    admin = [
        _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
        _rule(READ + WRITE, [GROUP], ["roles", "rolebindings"]),
    ]
    return [
        _role(f"system:aggregate-to-{name}", rules, labels={f"{AGGREGATE}{name}": "true"})
        for name, rules in (("view", view), ("edit", edit), ("admin", admin))
    ]


def cluster_roles() -> list[dict[str, Any]]:
    health = ["/livez", "/readyz", "/healthz", "/version", "/version/"]
    return [
        _role("cluster-admin", [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])]),
        _role("system:discovery", [_urls(["get"], [*health, "/openapi", "/openapi/*", "/api",
                                                   "/api/*", "/apis", "/apis/*"])]),
        _role("system:basic-user", [
            _rule(["create"], ["authorization.k8s.io"],
                  ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
            _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
        ]),
        _role("system:public-info-viewer", [_urls(["get"], health)]),
        _role("system:auth-delegator", [
            _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
            _rule(["create"], ["authorization.k8s.io"], ["subjectaccessreviews"]),
        ]),
        _role("admin", aggregate="admin"),
        _role("edit", aggregate="edit", labels={f"{AGGREGATE}admin": "true"}),
        _role("view", aggregate="view", labels={f"{AGGREGATE}edit": "true"}),
        *_aggregated(),
    ]  # fmt: skip


def cluster_role_bindings() -> list[dict[str, Any]]:
    authenticated = "system:authenticated"
    return [
        _binding("cluster-admin", ["system:masters"]),
        _binding("system:discovery", [authenticated]),
        _binding("system:basic-user", [authenticated]),
        _binding("system:public-info-viewer", [authenticated, "system:unauthenticated"]),
    ]


def roles() -> list[dict[str, Any]]:
    """Namespaced defaults: what an aggregated API server (kq's visibility server) reads."""
    reader = _role(
        "extension-apiserver-authentication-reader",
        [{**_rule(READ, [""], ["configmaps"]), "resourceNames": [AUTHENTICATION_CONFIG]}],
    )
    reader["kind"] = "Role"
    reader["metadata"]["namespace"] = "kube-system"
    return [reader]


def missing(store: Store) -> list[tuple[str, dict[str, Any]]]:
    """(storage, object) of each default not in ``store`` yet."""
    wanted = [(CLUSTER_ROLES, r) for r in cluster_roles()]
    wanted += [(CLUSTER_ROLE_BINDINGS, b) for b in cluster_role_bindings()]
    wanted += [(ROLES, r) for r in roles()]
    return [
        (s, o)
        for s, o in wanted
        if store.get(s, o["metadata"].get("namespace", ""), o["metadata"]["name"]) is None
    ]
