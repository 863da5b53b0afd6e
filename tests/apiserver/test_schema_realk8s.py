"""Custom resources are pruned, defaulted and validated as kube-apiserver does it.

Each case of ``tests/apiserver_units/schema_cases.py`` goes to the embedded server and to a real
kube-apiserver as a client sends it: a dry-run create, then dry-run updates of the main resource
and of its status over a stored base object. The two answers must be equal: the object returned
(pruned and defaulted), or the error's code, message and causes (field, reason, message, in
order), and the warnings. Nothing is recorded. Skipped unless the real binaries are built
(tests/realk8s/build.sh) or KQ_REALK8S=1 requires them.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.apiserver_units.schema_cases import BASES, CASES, EVENT, SINK
from tests.harness import embedded_apiserver, wait_until
from tests.realk8s.plane import binaries_built, real_control_plane

pytestmark = pytest.mark.realk8s

Obj = dict[str, Any]
GROUP = "schemacases.kqtest.example.com"
NAMESPACE = "ns"


@dataclass(frozen=True)
class Kind:
    """Where a kind's objects live and whether its status is a subresource."""

    api_version: str
    plural: str
    status: bool


KINDS = {
    "Workload": Kind("kueue.x-k8s.io/v1beta1", "workloads", True),
    "Event": Kind(f"{GROUP}/v1", "events", False),
    "Sink": Kind(f"{GROUP}/v1", "sinks", True),
}
_NULL_METADATA = (
    "metadata: null is refused as 400 'metadata must be an object'; kube-apiserver decodes it "
    "as empty metadata (422 name required on create, 400 name undeterminable on update)"
)
_FORMAT_TYPE = (
    "a non-string value of a formatted field: kube-openapi names the format and the Go type "
    "('must be of type date-time: \"int64\"'), we the JSON types"
)
_GO_VALUES = (
    "Go's rendering of values in messages: a duplicate map key prints as "
    "'map[string]interface {}{...}', a duplicate null as '\"null\"'; the DNS-1035 message ends "
    "with examples and the regex"
)
_DECODE = (
    "an embedded resource's non-string apiVersion is a decoding error for kube-apiserver (400, "
    "even on a status update), a 422 cause for us (and a status update does not look at spec)"
)
_WARN_ALL = (
    "unknown-field warnings: kube-apiserver warns for the whole body (the half an update "
    "ignores, metadata, additionalProperties: true, embedded metadata); we warn for the fields "
    "we prune, which skips the ignored half and metadata"
)
_STATUS_PATHS = (
    "a status update is validated from status down in kube-apiserver: messages read "
    "'admission... in body', junctor summaries carry the field 'status', and a list-type map "
    "item that is no object gets its own cause"
)
# Where the embedded server still answers otherwise, and why; a strict xfail each, so that a fix
# shows up as a pass to remove from here.
GAPS: dict[tuple[str, str], str] = {
    ("event-missing-default", "create"): _NULL_METADATA,
    ("event-missing-default", "update"): _NULL_METADATA,
    ("event-violations", "create"): _FORMAT_TYPE,
    ("event-violations", "update"): _FORMAT_TYPE,
    ("sink-bounds-and-formats", "create"): _GO_VALUES,
    ("sink-bounds-and-formats", "update"): _GO_VALUES,
    ("sink-more-bounds", "create"): _DECODE,
    ("sink-more-bounds", "update"): _DECODE,
    ("sink-more-bounds", "status"): _DECODE,
    ("sink-pruning", "create"): _WARN_ALL,
    ("sink-pruning", "update"): _WARN_ALL,
    ("sink-pruning", "status"): _WARN_ALL,
    ("sink-root-types", "status"): _STATUS_PATHS,
    ("workload-junk-in-spec-and-status", "create"): _WARN_ALL,
    ("workload-junk-in-spec-and-status", "update"): _WARN_ALL,
    ("workload-junk-in-spec-and-status", "status"): _WARN_ALL,
    ("workload-list-bounds-and-duplicates", "create"): _GO_VALUES,
    ("workload-list-bounds-and-duplicates", "update"): _GO_VALUES,
    ("workload-status-and-spec-edits", "create"): _WARN_ALL,
    ("workload-status-and-spec-edits", "update"): _WARN_ALL,
    ("workload-status-and-spec-edits", "status"): _GO_VALUES,
    ("workload-unknown-fields", "create"): _WARN_ALL,
    ("workload-unknown-fields", "update"): _WARN_ALL,
    ("workload-unknown-fields", "status"): _WARN_ALL,
    ("workload-violations", "status"): _STATUS_PATHS,
    ("workload-wrong-types", "create"): _WARN_ALL,
    ("workload-wrong-types", "update"): _WARN_ALL,
    ("workload-wrong-types", "status"): _STATUS_PATHS,
}
# Server-assigned metadata: different on each server by nature.
_ASSIGNED = ("uid", "resourceVersion", "creationTimestamp", "managedFields")


def _servable(schema: Any) -> Any:
    """``schema`` as a CRD may carry it: ``uniqueItems`` is refused in CRDs (quadratic), so
    only the unit tests reach it."""
    if isinstance(schema, dict):
        return {k: _servable(v) for k, v in schema.items() if k != "uniqueItems"}
    if isinstance(schema, list):
        return [_servable(v) for v in schema]
    return schema


def _crd(kind: str, schema: Obj) -> Obj:
    plural = KINDS[kind].plural
    version: Obj = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": _servable(schema)},
    }
    if KINDS[kind].status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [version],
        },
    }


@dataclass(frozen=True)
class Answer:
    """What a client sees of one request."""

    code: int
    body: Obj
    warnings: tuple[str, ...]


class Client:
    """Plain HTTPS requests with the kubeconfig's token, as any client makes them."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.server: str = cluster["server"]
        self.token: str = config["users"][0]["user"].get("token", "")
        self.tls = ssl.create_default_context(
            cafile=cluster.get("certificate-authority"),
            cadata=base64.b64decode(cluster.get("certificate-authority-data", "")).decode() or None,
        )

    def call(self, method: str, path: str, body: Any = None) -> Answer:
        return _answer(*self._send(method, path, body))

    def resource_version(self, path: str) -> str:
        version: str = json.loads(self._send("GET", path, None)[1])["metadata"]["resourceVersion"]
        return version

    def _send(self, method: str, path: str, body: Any) -> tuple[int, bytes, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, context=self.tls, timeout=30) as response:
                return response.status, response.read(), response.headers
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), exc.headers


def _answer(code: int, raw: bytes, headers: Any) -> Answer:
    body: Obj = json.loads(raw) if raw else {}
    if body.get("kind") == "Status":
        body = {k: body.get(k) for k in ("reason", "message", "details")}
        causes = (body["details"] or {}).get("causes")
        if causes:
            # kube-apiserver lists a 422's causes, and its message, in Go's map iteration
            # order, which changes from one request to the next: only the set is compared.
            causes.sort(key=lambda c: (c["field"], c["reason"], c["message"]))
            body["message"] = body["message"].partition(" is invalid: ")[0]
    else:
        for key in _ASSIGNED:
            body.get("metadata", {}).pop(key, None)
    return Answer(code, body, tuple(headers.get_all("Warning") or ()))


def _path(kind: str, name: str = "", sub: str = "") -> str:
    k = KINDS[kind]
    prefix = "/api" if "/" not in k.api_version else "/apis"
    tail = "/".join(p for p in (name, sub) if p)
    base = f"{prefix}/{k.api_version}/namespaces/{NAMESPACE}/{k.plural}"
    return f"{base}/{tail}" if tail else base


def _resource(kind: str, obj: Obj) -> Obj:
    """A case object as its kind's resource: this group's apiVersion, a name in ``ns``."""
    out = {"apiVersion": KINDS[kind].api_version, "kind": kind, **copy.deepcopy(obj)}
    out["apiVersion"], out["kind"] = KINDS[kind].api_version, kind
    if "metadata" not in out:
        out["metadata"] = {"name": kind.lower(), "namespace": NAMESPACE}
    return out


def _prepare(client: Client) -> None:
    """The test CRDs, the namespace and one stored base object per kind."""
    for kind, schema in (("Event", EVENT), ("Sink", SINK)):
        answer = client.call(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _crd(kind, schema)
        )
        assert answer.code == 201, answer
    client.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    for kind in BASES:
        # A new CRD is served a moment after it is created.
        wait_until(functools.partial(_stored, client, kind), f"a stored {kind}")


def _stored(client: Client, kind: str) -> bool:
    return client.call("POST", _path(kind), _resource(kind, BASES[kind])).code in (201, 409)


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Client, Client]]:
    if os.environ.get("KQ_REALK8S") != "1" and binaries_built() is None:
        pytest.skip(
            "real kube-apiserver/etcd not built: run tests/realk8s/build.sh "
            "(or set KQ_REALK8S=1 to build them and require these tests)"
        )
    workdir = tmp_path_factory.mktemp("schema-cases")
    with (
        embedded_apiserver(workdir / "embedded") as embedded,
        real_control_plane(workdir / "real") as real,
    ):
        pair = Client(embedded.kubeconfig), Client(real.kubeconfig)
        for client in pair:
            _prepare(client)
        yield pair


def _request(client: Client, kind: str, obj: Obj, verb: str) -> tuple[str, str, Obj]:
    """``create``: a dry-run create under a new name; ``update``/``status``: a dry-run update
    of the stored base object, of the main resource or of its status."""
    resource = _resource(kind, obj)
    name = kind.lower()
    meta = resource["metadata"]
    if isinstance(meta, dict):
        name = meta.get("name") or name
        if verb == "create":
            meta["name"] = f"new-{name}"
        else:
            meta["resourceVersion"] = client.resource_version(_path(kind, name))
    dry = "?dryRun=All"
    if verb == "create":
        return "POST", _path(kind) + dry, resource
    return "PUT", _path(kind, name, "status" if verb == "status" else "") + dry, resource


def _pairs() -> Iterator[Any]:
    for name, (kind, _) in sorted(CASES.items()):
        for verb in ("create", "update", *(("status",) if KINDS[kind].status else ())):
            gap = GAPS.get((name, verb))
            marks = [pytest.mark.xfail(reason=gap, strict=True)] if gap else []
            yield pytest.param(name, verb, id=f"{name}-{verb}", marks=marks)


@pytest.mark.parametrize(("name", "verb"), list(_pairs()))
def test_the_embedded_server_answers_as_kube_apiserver(
    clients: tuple[Client, Client], name: str, verb: str
) -> None:
    kind, obj = CASES[name]
    answers = [client.call(*_request(client, kind, obj, verb)) for client in clients]
    assert answers[0] == answers[1]
