"""Protobuf bodies of RBAC objects, reviews and TokenRequests, as kubectl sends them.

``kubectl create serviceaccount|role|clusterrole|rolebinding|clusterrolebinding|token`` and
``kubectl auth can-i|whoami`` post protobuf. Each message is described by a table of its
field numbers (from k8s.io/api's ``generated.proto``) and decoded into the JSON form.
"""

from __future__ import annotations

from typing import Any

from kq.sandbox.apiserver import protobuf
from kq.sandbox.apiserver.protobuf import ProtobufError

# A message: field number -> (JSON name, how to read it). A "how" is "str", "int", "bool",
# "strs" (repeated string), a nested message (a dict), or a 1-tuple of one (repeated message).
Message = dict[int, tuple[str, Any]]

_SELECTOR: Message = {
    1: ("matchLabels", "map"),
    2: ("matchExpressions", ({1: ("key", "str"), 2: ("operator", "str"), 3: ("values", "strs")},)),
}
_RULE: Message = {
    1: ("verbs", "strs"),
    2: ("apiGroups", "strs"),
    3: ("resources", "strs"),
    4: ("resourceNames", "strs"),
    5: ("nonResourceURLs", "strs"),
}
_ROLE: Message = {
    2: ("rules", (_RULE,)),
    3: ("aggregationRule", {1: ("clusterRoleSelectors", (_SELECTOR,))}),
}
_BINDING: Message = {
    2: ("subjects", ({1: ("kind", "str"), 2: ("apiGroup", "str"), 3: ("name", "str"),
                      4: ("namespace", "str")},)),
    3: ("roleRef", {1: ("apiGroup", "str"), 2: ("kind", "str"), 3: ("name", "str")}),
}  # fmt: skip
_RESOURCE_ATTRIBUTES: Message = {
    1: ("namespace", "str"),
    2: ("verb", "str"),
    3: ("group", "str"),
    4: ("version", "str"),
    5: ("resource", "str"),
    6: ("subresource", "str"),
    7: ("name", "str"),
}
_ACCESS: Message = {
    1: ("resourceAttributes", _RESOURCE_ATTRIBUTES),
    2: ("nonResourceAttributes", {1: ("path", "str"), 2: ("verb", "str")}),
}
_SUBJECT_ACCESS: Message = {
    **_ACCESS,
    3: ("user", "str"),
    4: ("groups", "strs"),
    5: ("extra", "extra"),
    6: ("uid", "str"),
}
_BOUND_OBJECT: Message = {
    1: ("kind", "str"),
    2: ("apiVersion", "str"),
    3: ("name", "str"),
    4: ("uid", "str"),
}
_TOKEN_REQUEST: Message = {
    1: ("audiences", "strs"),
    3: ("boundObjectRef", _BOUND_OBJECT),
    4: ("expirationSeconds", "int"),
}

KINDS: dict[str, Message] = {
    "ServiceAccount": {
        2: ("secrets", ({1: ("kind", "str"), 2: ("namespace", "str"), 3: ("name", "str")},)),
        3: ("imagePullSecrets", ({1: ("name", "str")},)),
        4: ("automountServiceAccountToken", "bool"),
    },
    "Role": _ROLE,
    "ClusterRole": _ROLE,
    "RoleBinding": _BINDING,
    "ClusterRoleBinding": _BINDING,
    "SelfSubjectAccessReview": {2: ("spec", _ACCESS)},
    "SubjectAccessReview": {2: ("spec", _SUBJECT_ACCESS)},
    "LocalSubjectAccessReview": {2: ("spec", _SUBJECT_ACCESS)},
    "SelfSubjectRulesReview": {2: ("spec", {1: ("namespace", "str")})},
    "SelfSubjectReview": {},
    "TokenReview": {2: ("spec", {1: ("token", "str"), 2: ("audiences", "strs")})},
    "TokenRequest": {2: ("spec", _TOKEN_REQUEST)},
}


def _read(how: Any, value: int | bytes) -> Any:
    if how == "int" or how == "bool":
        if not isinstance(value, int):
            raise ProtobufError("expected a number")
        return bool(value) if how == "bool" else value
    raw = value if isinstance(value, bytes) else b""
    if how in ("str", "strs"):
        return raw.decode()
    return message(how, raw)


def message(schema: Message, raw: bytes) -> dict[str, Any]:
    """Decode ``raw`` by ``schema``; unknown fields are skipped, as a proto reader does."""
    out: dict[str, Any] = {}
    for number, value in protobuf.fields(raw):
        if number not in schema:
            continue
        name, how = schema[number]
        if how == "map" or how == "extra":
            key, item = protobuf.map_entry(value)
            entry = item.decode() if how == "map" else [
                v.decode() for n, v in protobuf.fields(item) if n == 1 and isinstance(v, bytes)
            ]  # fmt: skip
            out.setdefault(name, {})[key] = entry
        elif how == "strs":
            out.setdefault(name, []).append(_read(how, value))
        elif isinstance(how, tuple):
            out.setdefault(name, []).append(_read(how[0], value))
        else:
            out[name] = _read(how, value)
    return out


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf body of any kind the server decodes (these and ``protobuf.SUPPORTED``)."""
    api_version, kind, raw = protobuf.envelope(body)
    schema = KINDS.get(kind)
    if schema is None:
        return protobuf.decode(body)
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    for number, value in protobuf.fields(raw):
        if number == 1 and isinstance(value, bytes):
            obj["metadata"] = protobuf.metadata(value)
    obj.update(message(schema, raw))
    return obj
