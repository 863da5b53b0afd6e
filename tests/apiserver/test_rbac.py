"""RBAC on both backends: ServiceAccount tokens, impersonation, ``kubectl auth can-i``,
resourceNames, subresources, wildcards, non-resource URLs and kube-apiserver's 403 bodies.

Every request here goes over HTTP to the API server, as kubectl or a raw client makes it;
the embedded server must answer what kube-apiserver (``--authorization-mode=RBAC``) does.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.apiserver.conftest import unique
from tests.apiserver.rbac_helpers import (
    RBAC,
    apply,
    binding,
    can_i,
    http,
    http_status,
    role,
    service_account,
    token,
)
from tests.harness import REPO, Cluster, wait_until


@pytest.fixture
def team(cluster: Cluster, kubectl_cache: Path, namespace: str) -> tuple[str, str]:
    """A namespace with ServiceAccount ``bot``, allowed by a Role to read pods and to patch
    Jobs' status, read one ConfigMap by name, and do anything to Leases; and its token."""
    apply(
        cluster, kubectl_cache,
        service_account(namespace, "bot"),
        role(namespace, "bot", [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["patch"]},
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "update", "watch"],
             "resourceNames": ["settings"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["*"], "verbs": ["*"]},
        ]),
        binding(namespace, "bot", "bot", "bot"),
    )  # fmt: skip
    return namespace, token(cluster, kubectl_cache, namespace, "bot")


def test_a_service_account_token_is_allowed_what_its_role_grants(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    ns, bearer = team
    user = f"system:serviceaccount:{ns}:bot"
    assert http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", bearer)[0] == 200
    code, status = http(cluster, "GET", "/api/v1/namespaces/default/pods", bearer)
    assert code == 403
    assert status == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'pods is forbidden: User "{user}" cannot list resource "pods" in API '
                   'group "" in the namespace "default"',
        "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403,
    }  # fmt: skip
    code, status = http(cluster, "DELETE", f"/apis/batch/v1/namespaces/{ns}/jobs/j", bearer)
    assert (code, status["details"]) == (403, {"name": "j", "group": "batch", "kind": "jobs"})
    assert status["message"] == (
        f'jobs.batch "j" is forbidden: User "{user}" cannot delete resource "jobs" in API '
        f'group "batch" in the namespace "{ns}"'
    )
    # Cluster-scoped: the message says so.
    code, status = http(cluster, "GET", "/api/v1/nodes", bearer)
    assert code == 403
    assert status["message"].endswith('cannot list resource "nodes" in API group "" at the '
                                      "cluster scope")  # fmt: skip
    # Without a token, or with a forged one: 401.
    forged = bearer[:-4] + ("AAAA" if not bearer.endswith("AAAA") else "BBBB")
    assert http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", forged)[0] == 401
    whoami = cluster.kubectl("auth", "whoami", "-o", "json", "--token", bearer,
                             cache_dir=kubectl_cache)  # fmt: skip
    assert whoami.returncode == 0, whoami.stderr
    info = json.loads(whoami.stdout)["status"]["userInfo"]
    assert info["username"] == user
    assert {"system:serviceaccounts", f"system:serviceaccounts:{ns}",
            "system:authenticated"} <= set(info["groups"])  # fmt: skip


def test_the_token_dies_with_its_service_account(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    ns, bearer = team
    assert http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", bearer)[0] == 200
    done = cluster.kubectl("delete", "serviceaccount", "bot", "-n", ns, cache_dir=kubectl_cache)
    assert done.returncode == 0, done.stderr
    # kube-apiserver looks ServiceAccounts up in its informer cache: allow it to catch up.
    wait_until(
        lambda: http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", bearer)[0] == 401,
        "the token to be refused",
        within=15,
    )
    apply(cluster, kubectl_cache, service_account(ns, "bot"))  # the same name, a new uid
    assert http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", bearer)[0] == 401


def test_a_token_request_is_validated(
    cluster: Cluster, namespace: str, kubectl_cache: Path
) -> None:
    cache = kubectl_cache
    admin = yaml.safe_load(cluster.kubeconfig.read_text())["users"][0]["user"]["token"]
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/ghost/token"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    code, status = http(cluster, "POST", path, admin, body)
    assert (code, status["reason"]) == (404, "NotFound")
    assert status["message"] == 'serviceaccounts "ghost" not found'
    short = {**body, "spec": {"expirationSeconds": 60}}
    code, status = http(cluster, "POST", path, admin, short)
    assert code == 404  # the ServiceAccount is looked up before the spec is validated
    apply(cluster, cache, service_account(namespace, "ghost"))
    code, status = http(cluster, "POST", path, admin, short)
    assert (code, status["reason"]) == (422, "Invalid")
    assert "may not specify a duration less than 10 minutes" in status["message"]
    code, answer = http(cluster, "POST", path, admin, body)
    assert code == 201
    assert answer["spec"]["expirationSeconds"] == 3600
    expires = dt.datetime.fromisoformat(answer["status"]["expirationTimestamp"])
    left = (expires - dt.datetime.now(dt.UTC)).total_seconds()
    assert 3000 < left <= 3600
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    reviews = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    code, who = http(cluster, "POST", reviews, answer["status"]["token"], review)
    assert code == 201
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:{namespace}:ghost"


def test_can_i_resource_names_subresources_and_wildcards(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    ns, _ = team
    sa = f"--as=system:serviceaccount:{ns}:bot"

    def can(*args: str, namespace: str = ns) -> bool:
        return can_i(cluster, kubectl_cache, *args, "-n", namespace, sa)

    assert can("list", "pods")
    assert not can("delete", "pods")
    assert not can("list", "pods", namespace="default")
    # Subresources: the status of Jobs, not Jobs themselves.
    assert can("patch", "jobs.batch", "--subresource=status")
    assert not can("patch", "jobs.batch")
    assert not can("patch", "jobs.batch", "--subresource=scale")
    # resourceNames: that ConfigMap only, and never a list.
    assert can("get", "configmaps/settings")
    assert can("update", "configmaps/settings")
    assert not can("get", "configmaps/other")
    assert not can("list", "configmaps")
    # "*" verbs and resources in the group.
    assert can("delete", "leases.coordination.k8s.io")
    assert can("escalate", "leases.coordination.k8s.io/anything")
    assert not can("get", "leases.coordination.k8s.io", namespace="default")


def test_requests_honour_resource_names_and_subresources(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    ns, bearer = team
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": ns},
           "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}]}}}}  # fmt: skip
    apply(cluster, kubectl_cache, {**cm, "metadata": {"name": "settings", "namespace": ns}},
          {**cm, "metadata": {"name": "other", "namespace": ns}}, job)  # fmt: skip
    base = f"/api/v1/namespaces/{ns}/configmaps"
    assert http(cluster, "GET", f"{base}/settings", bearer)[0] == 200
    code, status = http(cluster, "GET", f"{base}/other", bearer)
    assert code == 403
    assert status["message"].startswith('configmaps "other" is forbidden')
    # A watch named by a field selector is a request for that name.
    named = f"{base}?fieldSelector=metadata.name%3Dsettings&watch=true&timeoutSeconds=1"
    assert http_status(cluster, named, bearer) == 200
    assert http_status(cluster, named.replace("settings", "other"), bearer) == 403
    assert http_status(cluster, f"{base}?watch=true&timeoutSeconds=1", bearer) == 403
    merge = "application/merge-patch+json"
    status_patch = {"status": {"active": 0}}
    jobs = f"/apis/batch/v1/namespaces/{ns}/jobs/j"
    assert (
        http(cluster, "PATCH", f"{jobs}/status", bearer, status_patch, content_type=merge)[0] == 200
    )
    code, status = http(cluster, "PATCH", jobs, bearer, {"spec": {"suspend": False}},
                        content_type=merge)  # fmt: skip
    assert code == 403
    assert 'cannot patch resource "jobs" in API group "batch"' in status["message"]


def test_impersonation_needs_the_impersonate_verb(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    ns, bearer = team
    user = f"system:serviceaccount:{ns}:bot"
    code, status = http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", bearer,
                        headers={"Impersonate-User": "jane"})  # fmt: skip
    assert code == 403
    assert status["message"] == (
        f'users "jane" is forbidden: User "{user}" cannot impersonate resource "users" in API '
        'group "" at the cluster scope'
    )
    assert status["details"] == {"name": "jane", "kind": "users"}
    name = unique("impersonate-jane")
    apply(
        cluster, kubectl_cache,
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name},
         "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"],
                    "resourceNames": ["jane"]}]},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": ns}]},
        role(ns, "jane", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]),
        {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
         "metadata": {"name": "jane", "namespace": ns},
         "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "jane"},
         "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "jane"}]},
    )  # fmt: skip
    try:
        jane = {"Impersonate-User": "jane"}
        # Acting as jane: her rights, not the ServiceAccount's.
        assert (
            http(cluster, "GET", f"/api/v1/namespaces/{ns}/secrets", bearer, headers=jane)[0] == 200
        )
        assert http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", bearer, headers=jane)[0] == 403
        # Only jane: another name, or a group, is refused.
        code, _ = http(cluster, "GET", f"/api/v1/namespaces/{ns}/secrets", bearer,
                       headers={"Impersonate-User": "joe"})  # fmt: skip
        assert code == 403
        code, status = http(cluster, "GET", f"/api/v1/namespaces/{ns}/secrets", bearer,
                            headers={**jane, "Impersonate-Group": "admins"})  # fmt: skip
        assert code == 403
        assert status["message"].startswith('groups "admins" is forbidden')
        # The admin may act as anyone: kubectl --as.
        whoami = cluster.kubectl("auth", "whoami", "-o", "json", "--as=jane",
                                 "--as-group=devs", cache_dir=kubectl_cache)  # fmt: skip
        assert whoami.returncode == 0, whoami.stderr
        info = json.loads(whoami.stdout)["status"]["userInfo"]
        assert (info["username"], sorted(info["groups"])) == (
            "jane", ["devs", "system:authenticated"],
        )  # fmt: skip
    finally:
        cluster.kubectl("delete", "clusterrole,clusterrolebinding", name, cache_dir=kubectl_cache)


def test_subject_access_reviews_and_non_resource_urls(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    ns, bearer = team
    user = f"system:serviceaccount:{ns}:bot"
    admin = yaml.safe_load(cluster.kubeconfig.read_text())["users"][0]["user"]["token"]
    attrs = {"namespace": ns, "verb": "list", "resource": "pods"}
    spec = {"user": user, "groups": [f"system:serviceaccounts:{ns}"], "resourceAttributes": attrs}
    review: dict[str, Any] = {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec,
    }  # fmt: skip
    path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    code, answer = http(cluster, "POST", path, admin, review)
    assert code == 201
    assert answer["status"]["allowed"] is True
    assert answer["status"]["reason"] == (
        f'RBAC: allowed by RoleBinding "bot/{ns}" of Role "bot" to ServiceAccount "bot/{ns}"'
    )
    review["spec"]["resourceAttributes"]["verb"] = "delete"
    code, answer = http(cluster, "POST", path, admin, review)
    assert (code, answer["status"]["allowed"]) == (201, False)
    # Only those allowed to create SubjectAccessReviews may ask about others.
    code, status = http(cluster, "POST", path, bearer, review)
    assert code == 403
    assert status["message"].startswith("subjectaccessreviews.authorization.k8s.io is forbidden")
    # A malformed review is refused, not guessed at.
    wrong = {**review, "spec": {**spec, "groups": "admins"}}
    assert http(cluster, "POST", path, admin, wrong)[0] == 400
    # Neither attribute set: 422.
    empty = {**review, "spec": {"user": user}}
    code, status = http(cluster, "POST", path, admin, empty)
    assert (code, status["reason"]) == (422, "Invalid")
    assert "exactly one of nonResourceAttributes or resourceAttributes" in status["message"]
    # Non-resource URLs: discovery and health for every authenticated user, nothing else.
    assert http(cluster, "GET", "/version", bearer)[0] == 200
    assert http(cluster, "GET", "/apis", bearer)[0] == 200
    sa = f"--as={user}"
    assert can_i(cluster, kubectl_cache, "get", "/healthz", sa)
    assert not can_i(cluster, kubectl_cache, "get", "/logs/x", sa)
    name = unique("logs-reader")
    apply(
        cluster, kubectl_cache,
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name},
         "rules": [{"nonResourceURLs": ["/logs/*"], "verbs": ["get"]}]},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": ns}]},
    )  # fmt: skip
    try:
        assert can_i(cluster, kubectl_cache, "get", "/logs/x", sa)
        assert not can_i(cluster, kubectl_cache, "get", "/logsx", sa)
        listed = cluster.kubectl("auth", "can-i", "--list", "-n", ns, sa, cache_dir=kubectl_cache)
        assert listed.returncode == 0, listed.stderr
        rows = {" ".join(line.split()) for line in listed.stdout.splitlines()}
        assert "pods [] [] [get list watch]" in rows
        assert "[/logs/*] [] [get]" in rows
    finally:
        cluster.kubectl("delete", "clusterrole,clusterrolebinding", name, cache_dir=kubectl_cache)


def test_a_binding_to_a_missing_role_says_so(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    ns, bearer = team
    apply(cluster, kubectl_cache, binding(ns, "dangling", "nowhere", "bot"))
    code, status = http(cluster, "GET", f"/api/v1/namespaces/{ns}/secrets", bearer)
    assert code == 403
    assert status["message"].endswith(f': RBAC: role.{RBAC} "nowhere" not found')


def test_aggregated_cluster_roles_gather_the_selected_rules(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    if cluster.backend != "embedded":
        pytest.skip("kube-controller-manager aggregates ClusterRoles; the real backend runs none")
    ns, _ = team
    name = unique("agg")
    label = {f"{RBAC}/aggregate-to-{name}": "true"}
    apply(
        cluster, kubectl_cache,
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name},
         "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": label}]}},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
         "metadata": {"name": f"{name}-part", "labels": label},
         "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"]}]},
        binding(ns, "agg", name, "bot", kind="ClusterRole"),
        binding(ns, "view", "view", "bot", kind="ClusterRole"),
    )  # fmt: skip
    sa = f"--as=system:serviceaccount:{ns}:bot"
    try:
        assert can_i(cluster, kubectl_cache, "list", "deployments.apps", "-n", ns, sa)
        assert not can_i(cluster, kubectl_cache, "create", "deployments.apps", "-n", ns, sa)
        # The default "view" aggregates system:aggregate-to-view.
        assert can_i(cluster, kubectl_cache, "list", "jobs.batch", "-n", ns, sa)
        assert not can_i(cluster, kubectl_cache, "list", "secrets", "-n", ns, sa)
    finally:
        cluster.kubectl("delete", "clusterrole", name, f"{name}-part", cache_dir=kubectl_cache)


def test_kubectl_create_sends_rbac_objects_the_server_stores_alike(
    cluster: Cluster, kubectl_cache: Path, namespace: str
) -> None:
    """``kubectl create`` posts these kinds as protobuf: each is stored as kubectl meant."""
    name = unique("made")

    def create(*args: str) -> dict[str, Any]:
        done = cluster.kubectl("create", *args, "-o", "json", cache_dir=kubectl_cache)
        assert done.returncode == 0, done.stderr
        made: dict[str, Any] = json.loads(done.stdout)
        return made

    made = create("serviceaccount", "bot", "-n", namespace)
    assert (made["kind"], made["metadata"]["name"]) == ("ServiceAccount", "bot")
    made = create("role", "reader", "-n", namespace, "--verb=get,list",
                  "--resource=pods,jobs.batch/status", "--resource-name=a")  # fmt: skip
    assert made["rules"] == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"],
         "resourceNames": ["a"]},
        {"verbs": ["get", "list"], "apiGroups": ["batch"], "resources": ["jobs/status"],
         "resourceNames": ["a"]},
    ]  # fmt: skip
    made = create("rolebinding", "reader", "-n", namespace, "--role=reader",
                  f"--serviceaccount={namespace}:bot", "--group=devs", "--user=jane")  # fmt: skip
    assert made["roleRef"] == {"apiGroup": RBAC, "kind": "Role", "name": "reader"}
    assert made["subjects"] == [
        {"kind": "User", "apiGroup": RBAC, "name": "jane"},
        {"kind": "Group", "apiGroup": RBAC, "name": "devs"},
        {"kind": "ServiceAccount", "name": "bot", "namespace": namespace},
    ]
    try:
        made = create("clusterrole", name, f"--aggregation-rule=team={name}")
        assert made["aggregationRule"] == {
            "clusterRoleSelectors": [{"matchLabels": {"team": name}}]
        }
        made = create("clusterrole", f"{name}-urls", "--verb=get", "--non-resource-url=/logs/*")
        assert made["rules"] == [{"verbs": ["get"], "nonResourceURLs": ["/logs/*"]}]
        assert can_i(cluster, kubectl_cache, "list", "pods/a", "-n", namespace,
                     f"--as=system:serviceaccount:{namespace}:bot")  # fmt: skip
        assert can_i(cluster, kubectl_cache, "get", "jobs.batch/a", "--subresource=status",
                     "-n", namespace, "--as=jane")  # fmt: skip
        assert not can_i(cluster, kubectl_cache, "get", "pods/b", "-n", namespace, "--as=jane")
    finally:
        cluster.kubectl("delete", "clusterrole", name, f"{name}-urls", cache_dir=kubectl_cache)


def test_a_token_for_another_audience_is_not_the_api_servers(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    ns, _ = team
    done = cluster.kubectl("create", "token", "bot", "-n", ns, "--audience=vault",
                           cache_dir=kubectl_cache)  # fmt: skip
    assert done.returncode == 0, done.stderr
    vault = done.stdout.strip()
    assert http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", vault)[0] == 401
    admin = yaml.safe_load(cluster.kubeconfig.read_text())["users"][0]["user"]["token"]
    path = "/apis/authentication.k8s.io/v1/tokenreviews"
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
              "spec": {"token": vault, "audiences": ["vault"]}}  # fmt: skip
    code, answer = http(cluster, "POST", path, admin, review)
    assert code == 201
    assert answer["status"]["authenticated"] is True
    assert answer["status"]["user"]["username"] == f"system:serviceaccount:{ns}:bot"
    assert answer["status"]["audiences"] == ["vault"]
    code, answer = http(cluster, "POST", path, admin, {**review, "spec": {"token": vault}})
    assert code == 201
    assert not answer["status"].get("authenticated")


def test_deploy_visibility_roles_aggregate_into_view(
    cluster: Cluster, kubectl_cache: Path, team: tuple[str, str]
) -> None:
    """Who may see pending workloads: ``deploy/visibility.yaml``'s ClusterRoles join the
    default ``view`` (and ``edit``, ``admin``) through their aggregate-to labels."""
    if cluster.backend != "embedded":
        pytest.skip("kube-controller-manager aggregates ClusterRoles; the real backend runs none")
    ns, _ = team
    manifest = REPO / "deploy" / "visibility.yaml"
    viewers = [
        d for d in yaml.safe_load_all(manifest.read_text()) if d and d["kind"] == "ClusterRole"
    ]
    assert viewers
    apply(cluster, kubectl_cache, *viewers, binding(ns, "view", "view", "bot", kind="ClusterRole"))
    admin = yaml.safe_load(cluster.kubeconfig.read_text())["users"][0]["user"]["token"]

    def allowed(resource: str, namespace: str) -> bool:
        attrs = {"verb": "list", "group": "visibility.kueue.x-k8s.io", "resource": resource,
                 "subresource": "pendingworkloads", "namespace": namespace}  # fmt: skip
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": f"system:serviceaccount:{ns}:bot",
                           "resourceAttributes": attrs}}  # fmt: skip
        code, answer = http(cluster, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                            admin, review)  # fmt: skip
        assert code == 201, answer
        return bool(answer["status"]["allowed"])

    try:
        assert allowed("localqueues", ns)
        assert not allowed("localqueues", "default")  # the binding is in the team's namespace
        assert not allowed("clusterqueues", "")  # and grants nothing cluster-wide
    finally:
        names = [d["metadata"]["name"] for d in viewers]
        cluster.kubectl("delete", "clusterrole", *names, cache_dir=kubectl_cache)
