"""RBAC's escalation prevention on both backends: a user who may write Roles and bindings
can grant only what they hold, unless RBAC lets them ``escalate`` or ``bind``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.apiserver.rbac_helpers import RBAC, apply, binding, http, role, service_account, token
from tests.harness import Cluster


def cluster_binding(ns: str, role_name: str) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
            "metadata": {"name": f"to-{role_name}", "namespace": ns},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role_name},
            "subjects": [{"kind": "User", "name": "someone"}]}  # fmt: skip


@pytest.fixture
def writer(cluster: Cluster, kubectl_cache: Path, namespace: str) -> tuple[str, str]:
    """ServiceAccount ``writer`` may write Roles and RoleBindings and read pods in the
    namespace; its token."""
    apply(
        cluster, kubectl_cache,
        service_account(namespace, "writer"),
        role(namespace, "writer", [
            {"apiGroups": [RBAC], "resources": ["roles", "rolebindings"],
             "verbs": ["create", "update", "get"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        ]),
        binding(namespace, "writer", "writer", "writer"),
    )  # fmt: skip
    return namespace, token(cluster, kubectl_cache, namespace, "writer")


def test_a_role_grants_only_what_its_writer_holds(
    cluster: Cluster, writer: tuple[str, str]
) -> None:
    ns, bearer = writer
    roles = f"/apis/{RBAC}/v1/namespaces/{ns}/roles"
    held = role(ns, "held", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
    assert http(cluster, "POST", roles, bearer, held)[0] == 201
    more = role(ns, "more", [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete", "patch"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list"],
         "resourceNames": ["a"]},
    ])  # fmt: skip
    code, status = http(cluster, "POST", roles, bearer, more)
    assert code == 403
    assert status["details"] == {"name": "more", "group": RBAC, "kind": "roles"}
    assert status["message"] == (
        f'roles.{RBAC} "more" is forbidden: user "system:serviceaccount:{ns}:writer" '
        f'(groups=["system:serviceaccounts" "system:serviceaccounts:{ns}" '
        '"system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete" "patch"]}\n'
        '{APIGroups:["batch"], Resources:["jobs"], ResourceNames:["a"], Verbs:["list"]}'
    )
    # Updating a role into more than one holds is refused the same way.
    code, current = http(cluster, "GET", f"{roles}/held", bearer)
    assert code == 200
    current["rules"][0]["verbs"] = ["*"]
    code, status = http(cluster, "PUT", f"{roles}/held", bearer, current)
    assert code == 403
    assert status["message"].endswith('{APIGroups:[""], Resources:["pods"], Verbs:["*"]}')


def test_a_binding_grants_only_what_its_writer_holds_or_may_bind(
    cluster: Cluster, kubectl_cache: Path, writer: tuple[str, str]
) -> None:
    ns, bearer = writer
    bindings = f"/apis/{RBAC}/v1/namespaces/{ns}/rolebindings"
    code, status = http(cluster, "POST", bindings, bearer, cluster_binding(ns, "cluster-admin"))
    assert code == 403
    assert status["message"].startswith(f'rolebindings.{RBAC} "to-cluster-admin" is forbidden')
    assert '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in status["message"]
    # A role that does not exist: 404, as the binding's rules cannot be resolved.
    code, status = http(cluster, "POST", bindings, bearer, cluster_binding(ns, "no-such-role"))
    assert (code, status["reason"]) == (404, "NotFound")
    # The "bind" verb on one ClusterRole lets the writer hand it out without holding it.
    delegator = "system:auth-delegator"  # a default role: create TokenReviews and SARs
    assert http(cluster, "POST", bindings, bearer, cluster_binding(ns, delegator))[0] == 403
    apply(
        cluster, kubectl_cache,
        role(ns, "binder", [{"apiGroups": [RBAC], "resources": ["clusterroles"],
                             "verbs": ["bind"], "resourceNames": [delegator]}]),
        binding(ns, "binder", "binder", "writer"),
    )  # fmt: skip
    assert http(cluster, "POST", bindings, bearer, cluster_binding(ns, delegator))[0] == 201
    assert http(cluster, "POST", bindings, bearer, cluster_binding(ns, "cluster-admin"))[0] == 403


def test_the_escalate_verb_lets_a_writer_grant_more(
    cluster: Cluster, kubectl_cache: Path, writer: tuple[str, str]
) -> None:
    ns, bearer = writer
    apply(
        cluster, kubectl_cache,
        role(ns, "escalator", [{"apiGroups": [RBAC], "resources": ["roles"],
                                "verbs": ["escalate"]}]),
        binding(ns, "escalator", "escalator", "writer"),
    )  # fmt: skip
    anything = role(ns, "anything", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
    assert (
        http(cluster, "POST", f"/apis/{RBAC}/v1/namespaces/{ns}/roles", bearer, anything)[0] == 201
    )
