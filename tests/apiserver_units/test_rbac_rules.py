"""RBAC evaluation and request attributes of the embedded server, as properties.

Widening a rule (a wildcard for a list, no resourceNames) or adding a binding never takes
a permission away; a request path parses back into the attributes it was built from;
the admin token is answered without evaluating any binding.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict

from kq.sandbox.apiserver.access import Gate, attributes
from kq.sandbox.apiserver.authn import ADMIN, Authenticator, Signer
from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.escalation import uncovered
from kq.sandbox.apiserver.rbac import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
    Attributes,
    Authorizer,
    User,
    rule_allows,
)
from kq.sandbox.apiserver.store import Store

_word = st.sampled_from(["a", "b", "pods", "jobs", "batch", "x-y"])
_verb = st.sampled_from(["get", "list", "watch", "create", "patch", "delete", "update"])
_groups = st.sampled_from(["", "batch", "apps", "kueue.x-k8s.io"])
_sub = st.sampled_from(["", "", "status", "scale"])


@st.composite
def requests(draw: st.DrawFn) -> Attributes:
    return Attributes(
        verb=draw(_verb),
        group=draw(_groups),
        version="v1",
        resource=draw(_word),
        subresource=draw(_sub),
        namespace=draw(st.sampled_from(["", "team", "other"])),
        name=draw(st.sampled_from(["", "a", "b"])),
    )


@st.composite
def rules(draw: st.DrawFn) -> dict[str, Any]:
    resources = draw(st.lists(st.one_of(_word, _word.map(lambda w: f"{w}/status")), max_size=3))
    rule: dict[str, Any] = {
        "verbs": draw(st.lists(_verb, max_size=3)),
        "apiGroups": draw(st.lists(_groups, max_size=2)),
        "resources": resources,
    }
    if draw(st.booleans()):
        rule["resourceNames"] = draw(st.lists(st.sampled_from(["a", "b"]), min_size=1))
    return rule


@given(rules(), requests(), st.sampled_from(["verbs", "apiGroups", "resources", "names"]))
def test_widening_a_rule_never_denies_what_it_allowed(
    rule: dict[str, Any], request: Attributes, widen: str
) -> None:
    wider = dict(rule)
    if widen == "names":
        wider.pop("resourceNames", None)
    else:
        wider[widen] = ["*"]
    if rule_allows(rule, request):
        assert rule_allows(wider, request)


@given(requests())
def test_a_subresource_wildcard_covers_that_subresource_only(request: Attributes) -> None:
    rule = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]}
    assert rule_allows(rule, request) == (request.subresource == "status")


def _put(store: Store, storage: str, obj: dict[str, Any]) -> None:
    store.put(storage, obj, store.get(storage, obj["metadata"].get("namespace", ""),
                                      obj["metadata"]["name"]))  # fmt: skip


def _bind(store: Store, index: int, role_rules: list[dict[str, Any]], namespace: str) -> None:
    """Role ``r<index>`` with ``role_rules``, bound to user ``u`` (cluster-wide without a
    namespace)."""
    name = f"r{index}"
    ref_kind = "Role" if namespace else "ClusterRole"
    role_meta = {"name": name, "namespace": namespace} if namespace else {"name": name}
    _put(store, ROLES if namespace else CLUSTER_ROLES, {"metadata": role_meta, "rules": role_rules})
    _put(
        store, ROLE_BINDINGS if namespace else CLUSTER_ROLE_BINDINGS,
        {"metadata": dict(role_meta), "roleRef": {"kind": ref_kind, "name": name},
         "subjects": [{"kind": "User", "name": "u"}]},
    )  # fmt: skip


@settings(max_examples=60)
@given(
    st.lists(st.tuples(st.lists(rules(), max_size=3), st.sampled_from(["", "team"])), max_size=4),
    st.lists(rules(), min_size=1, max_size=3),
    st.sampled_from(["", "team", "other"]),
    st.lists(requests(), min_size=1, max_size=8),
)
def test_adding_a_binding_never_takes_a_permission_away(
    existing: list[tuple[list[dict[str, Any]], str]],
    added: list[dict[str, Any]],
    where: str,
    asked: list[Attributes],
) -> None:
    store = Store(None)
    authorizer = Authorizer(store)
    user = User("u", groups=("system:authenticated",))
    for index, (role_rules, namespace) in enumerate(existing):
        _bind(store, index, role_rules, namespace)
    before = [authorizer.authorize(user, a)[0] for a in asked]
    _bind(store, len(existing), added, where)
    after = [authorizer.authorize(user, a)[0] for a in asked]
    assert all(a or not b for b, a in zip(before, after, strict=True))
    # Each allowed request is allowed by a rule bound where the request is.
    for request, allowed in zip(asked, after, strict=True):
        scopes = {""} | ({request.namespace} if request.namespace else set())
        bound = [r for rs, ns in [*existing, (added, where)] if ns in scopes for r in rs]
        assert allowed == any(rule_allows(r, request) for r in bound)


@given(
    _groups,
    st.sampled_from(["jobs", "pods", "workloads"]),
    st.sampled_from(["", "team"]),
    st.sampled_from(["", "a"]),
    _sub,
    st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"]),
    st.booleans(),
)
def test_a_request_path_parses_into_its_attributes(
    group: str, resource: str, namespace: str, name: str, sub: str, method: str, watch: bool
) -> None:
    sub = sub if name else ""
    prefix = f"/apis/{group}/v1" if group else "/api/v1"
    path = prefix + (f"/namespaces/{namespace}" if namespace else "") + f"/{resource}"
    path += (f"/{name}" if name else "") + (f"/{sub}" if sub else "")
    query = {"watch": "true"} if watch else {}
    found = attributes(method, path, query)
    verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    expected = verb[method]
    if not name and expected == "get":
        expected = "watch" if watch else "list"
    if not name and expected == "delete":
        expected = "deletecollection"
    assert found == Attributes(expected, True, group, "v1", resource, sub, namespace, name, path)


def test_non_resource_paths_and_the_namespace_itself() -> None:
    assert attributes("GET", "/apis/batch/v1", {}) == Attributes(
        "get", resource_request=False, path="/apis/batch/v1"
    )
    assert attributes("GET", "/healthz", {}).resource_request is False
    # A namespace is read within itself: a RoleBinding there may grant "get namespaces".
    ns = attributes("GET", "/api/v1/namespaces/team", {})
    assert (ns.resource, ns.name, ns.namespace) == ("namespaces", "team", "team")
    status = attributes("PUT", "/api/v1/namespaces/team/status", {})
    assert (status.resource, status.subresource, status.name) == ("namespaces", "status", "team")
    named = attributes("GET", "/api/v1/pods", {"watch": "1", "fieldSelector": "metadata.name=p"})
    assert (named.verb, named.name) == ("watch", "p")


class _Counting(Authorizer):
    calls = 0

    def authorize(self, user: User, attrs: Attributes) -> tuple[bool, str]:
        self.calls += 1
        return super().authorize(user, attrs)


def test_the_admin_token_skips_rbac() -> None:
    store = Store(None)
    authorizer = _Counting(store)
    gate = Gate(Authenticator("secret", store, Signer(b"k" * 32)), authorizer)
    headers = CIMultiDict({"Authorization": "Bearer secret"})
    for _ in range(100):
        assert gate.user("GET", "/api/v1/pods", {}, headers) is ADMIN
    assert authorizer.calls == 0
    # Acting as someone else costs the checks of that someone: impersonating jane (allowed
    # to system:masters), then jane listing pods (no binding: 403).
    headers.add("Impersonate-User", "jane")
    with pytest.raises(ApiError) as denied:
        gate.user("GET", "/api/v1/pods", {}, headers)
    assert denied.value.code == 403
    assert denied.value.message.startswith('pods is forbidden: User "jane" cannot list')
    assert authorizer.calls == 2
    # A token that is neither the admin's nor signed by the server is refused.
    with pytest.raises(ApiError) as refused:
        gate.user("GET", "/api/v1/pods", {}, CIMultiDict({"Authorization": "Bearer nope"}))
    assert refused.value.code == 401


@given(st.text(max_size=80))
def test_any_bearer_token_is_a_user_or_a_401(token: str) -> None:
    store = Store(None)
    gate = Gate(Authenticator("secret", store, Signer(b"k" * 32)), Authorizer(store))
    headers = CIMultiDict({"Authorization": f"Bearer {token}"})
    if token == "secret":
        assert gate.user("GET", "/api/v1/pods", {}, headers) is ADMIN
        return
    with pytest.raises(ApiError) as refused:
        gate.user("GET", "/api/v1/pods", {}, headers)
    assert refused.value.code == 401


@given(st.lists(rules(), max_size=4))
def test_rules_cover_themselves(held: list[dict[str, Any]]) -> None:
    assert uncovered(held, held) == []


@given(st.lists(rules(), max_size=3), rules(), requests())
def test_what_covered_rules_allow_their_owner_is_allowed(
    owner: list[dict[str, Any]], granted: dict[str, Any], request: Attributes
) -> None:
    """Escalation prevention is sound: a role that passes the check grants nothing its
    writer could not do."""
    if not uncovered(owner, [granted]) and rule_allows(granted, request):
        assert any(rule_allows(rule, request) for rule in owner)
