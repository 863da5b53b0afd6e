"""Writes share unchanged parts with stored states and reuse their JSON: nothing stored
may change afterwards, and what is served must be what a plain encoding would give."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import given

from kq.sandbox.apiserver.api import Api
from kq.sandbox.apiserver.app import Server
from kq.sandbox.apiserver.context import Ctx
from kq.sandbox.apiserver.patch import json_merge_patch, merge_patch_sharing
from kq.sandbox.apiserver.patching import JSON_PATCH, MERGE, STRATEGIC
from kq.sandbox.apiserver.registry import CRD, NAMESPACE, Registry, ResourceType
from kq.sandbox.apiserver.store import Store
from kq.sandbox.apiserver.watch import Hub
from kq.sandbox.apiserver.writes import unshared as _unshared
from tests.apiserver_units.test_patch import json_docs

GROUP = "sharing.example.com"
WIDGETS = f"/apis/{GROUP}/v1/namespaces/ns/widgets"


def _crd(*, preserve_unknown: bool = False) -> dict[str, Any]:
    root: dict[str, Any] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer"},
                    "color": {"type": "string", "default": "blue"},
                    "nested": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "status": {
                "type": "object",
                "properties": {
                    "phase": {"type": "string", "default": "Pending"},
                    "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                },
            },
        },
    }
    if preserve_unknown:
        root["x-kubernetes-preserve-unknown-fields"] = True
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


def _widget(name: str = "w") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name, "labels": {"a": "1"}},
        "spec": {"size": 1, "nested": {"k": "v"}},
        "status": {"counts": {"x": 1}},
    }


async def _api(crd: dict[str, Any] | None = None) -> tuple[Api, ResourceType]:
    api = Api(Store(None), Registry())
    await api.create(NAMESPACE, "", {"metadata": {"name": "ns"}}, Ctx())
    await api.create(CRD, "", crd or _crd(), Ctx())
    rt = api.registry.get(GROUP, "v1", "widgets")
    assert rt is not None
    return api, rt


def _patch(body: Any) -> bytes:
    return json.dumps(body).encode()


async def test_status_merge_patch_leaves_the_earlier_state_alone() -> None:
    api, rt = await _api()
    await api.create(rt, "ns", _widget(), Ctx(manager="m"))
    first = _patch({"status": {"counts": {"x": 1}}})
    await api.patch(rt, "ns", "w", MERGE, first, Ctx(manager="s"), "status")
    before = api.get(rt, "ns", "w")
    assert before is api.store.get(rt.storage, "ns", "w")
    snapshot = copy.deepcopy(before)
    spec = before["spec"]
    patch = {"status": {"counts": {"y": 2}, "phase": None}, "metadata": {"labels": {"b": "2"}}}
    after, _ = await api.patch(rt, "ns", "w", MERGE, _patch(patch), Ctx(manager="s"), "status")
    assert before == snapshot
    assert before["spec"] is spec
    assert after["spec"] == spec
    assert after["status"] == {"counts": {"x": 1, "y": 2}, "phase": "Pending"}
    assert after["metadata"]["labels"] == {"a": "1"}
    assert api.get(rt, "ns", "w") == after


async def test_main_merge_patch_leaves_the_earlier_state_alone() -> None:
    api, rt = await _api()
    await api.create(rt, "ns", _widget(), Ctx(manager="m"))
    await api.patch(rt, "ns", "w", MERGE, _patch({"status": {"phase": "A"}}), Ctx(), "status")
    before = api.get(rt, "ns", "w")
    assert before is api.store.get(rt.storage, "ns", "w")
    snapshot = copy.deepcopy(before)
    patch = {"spec": {"nested": {"k2": "v2"}, "color": None}, "status": {"phase": "Gone"}}
    after, _ = await api.patch(rt, "ns", "w", MERGE, _patch(patch), Ctx(manager="n"))
    assert before == snapshot
    assert after["spec"] == {"size": 1, "color": "blue", "nested": {"k": "v", "k2": "v2"}}
    assert after["status"] == before["status"]
    assert after["status"] is not before["status"]
    assert after["metadata"]["generation"] == 2


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        (JSON_PATCH, [{"op": "add", "path": "/status", "value": {"phase": "Done"}}]),
        (MERGE, {"status": {"phase": "Done"}}),
    ],
)
async def test_status_patch_under_a_root_preserving_unknown_fields(
    content_type: str, body: Any
) -> None:
    api, rt = await _api(_crd(preserve_unknown=True))
    await api.create(rt, "ns", _widget(), Ctx())
    # A schema that no longer knows spec.nested: pruning under the root would drop it.
    crd = copy.deepcopy(api.get(CRD, "", f"widgets.{GROUP}"))
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    del root["properties"]["spec"]["properties"]["nested"]
    await api.update(CRD, "", crd["metadata"]["name"], crd, Ctx())
    rt = api.registry.get(GROUP, "v1", "widgets") or rt
    before = api.store.get(rt.storage, "ns", "w")
    snapshot = copy.deepcopy(before)
    after, _ = await api.patch(rt, "ns", "w", content_type, _patch(body), Ctx(), "status")
    assert before == snapshot
    assert after["status"]["phase"] == "Done"


async def test_status_patch_after_a_schema_change_leaves_stored_subtrees_alone() -> None:
    crd = _crd()
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    del root["properties"]["spec"]["properties"]["color"]["default"]
    del root["properties"]["status"]["properties"]["phase"]["default"]
    api, rt = await _api(crd)
    await api.create(rt, "ns", _widget(), Ctx())
    counts = _patch({"status": {"counts": {"x": 1, "y": 2}}})
    await api.patch(rt, "ns", "w", MERGE, counts, Ctx(), "status")
    # Without defaults reads serve the stored object itself, even after a schema change.
    status = root["properties"]["status"]["properties"]
    status["counts"] = {"type": "object", "properties": {"x": {"type": "integer"}}}
    crd = {**crd, "metadata": api.get(CRD, "", crd["metadata"]["name"])["metadata"]}
    await api.update(CRD, "", crd["metadata"]["name"], crd, Ctx())
    rt = api.registry.get(GROUP, "v1", "widgets") or rt
    before = api.store.get(rt.storage, "ns", "w")
    snapshot = copy.deepcopy(before)
    phase = _patch({"status": {"phase": "Done"}})
    after, _ = await api.patch(rt, "ns", "w", MERGE, phase, Ctx(), "status")
    assert before == snapshot
    assert after["status"] == {"counts": {"x": 1}, "phase": "Done"}


async def test_crd_status_write_does_not_touch_the_stored_spec() -> None:
    api, _ = await _api()
    name = f"widgets.{GROUP}"
    stored = api.store.get(CRD.storage, "", name)
    assert stored is not None
    snapshot, names = copy.deepcopy(stored), stored["spec"]["names"]
    body = _patch({"status": {"storedVersions": ["v1"]}})
    await api.patch(CRD, "", name, MERGE, body, Ctx(), "status")
    assert stored == snapshot
    assert stored["spec"]["names"] is names


async def test_namespace_status_patch_keeps_earlier_labels() -> None:
    api = Api(Store(None), Registry())
    await api.create(NAMESPACE, "", {"metadata": {"name": "ns"}}, Ctx())
    before = api.get(NAMESPACE, "", "ns")
    assert before is api.store.get(NAMESPACE.storage, "", "ns")
    snapshot = copy.deepcopy(before)
    body = _patch({"metadata": {"labels": {"x": "y"}}})
    await api.patch(NAMESPACE, "", "ns", STRATEGIC, body, Ctx())
    await api.patch(NAMESPACE, "", "ns", MERGE, _patch({"status": {"phase": "A"}}), Ctx(), "status")
    assert before == snapshot


async def test_history_states_survive_later_writes() -> None:
    api, rt = await _api()
    await api.create(rt, "ns", _widget(), Ctx())
    for i in range(3):
        patch = _patch({"status": {"counts": {"x": i}}})
        await api.patch(rt, "ns", "w", MERGE, patch, Ctx(), "status")
        await api.patch(rt, "ns", "w", MERGE, _patch({"spec": {"size": i + 2}}), Ctx())
    changes = [c for c in api.store.history if c.resource == rt.storage]
    for change in changes:
        assert json.loads(change.body) == change.obj


async def test_in_process_callers_keep_their_bodies() -> None:
    api, rt = await _api()
    body = _widget()
    snapshot = copy.deepcopy(body)
    await api.create(rt, "ns", body, Ctx(manager="m"))
    assert body == snapshot
    live = api.get(rt, "ns", "w")
    update = {**copy.deepcopy(live), "spec": {"size": 5}}
    update_snapshot = copy.deepcopy(update)
    await api.update(rt, "ns", "w", update, Ctx())
    assert update == update_snapshot


def test_store_reuses_committed_json_only_for_stored_objects(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    first = store.put("/cm", {"metadata": {"name": "a", "namespace": "n"}, "data": {}}, None)
    assert store.encoded("/cm", first.obj) == json.dumps(first.obj, separators=(",", ":"))
    assert store.encoded("/cm", copy.deepcopy(first.obj)) is None
    second = store.put("/cm", {**first.obj, "metadata": {**first.obj["metadata"]}}, first.obj)
    assert store.encoded("/cm", first.obj) is None
    gone = store.remove("/cm", second.obj)
    assert json.loads(gone.body) == gone.obj
    assert gone.obj["metadata"]["resourceVersion"] == str(gone.rv)
    assert store.encoded("/cm", second.obj) is None
    store.close()
    reopened = Store(tmp_path / "db")
    replay = reopened.since(0) or []
    assert [(c.obj, c.prev, c.body) for c in replay] == [
        (first.obj, None, first.body),
        (second.obj, first.obj, second.body),
        (gone.obj, second.obj, gone.body),
    ]


@given(json_docs, json_docs)
def test_sharing_merge_patch_matches_and_mutates_nothing(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    target_before, patch_before = copy.deepcopy(target), copy.deepcopy(patch)
    assert merge_patch_sharing(target, patch) == json_merge_patch(target, patch)
    assert (target, patch) == (target_before, patch_before)


def _containers(value: Any) -> list[int]:
    found = [id(value)] if isinstance(value, dict | list) else []
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    )
    for child in children:
        found += _containers(child)
    return found


@given(json_docs, json_docs)
def test_an_unshared_merge_result_holds_no_map_or_list_of_the_target(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    merged = merge_patch_sharing(target, patch)
    expected = copy.deepcopy(merged)
    unshared = _unshared(merged, target)
    assert unshared == expected
    assert not set(_containers(unshared)) & set(_containers(target))


@pytest.fixture
async def http() -> AsyncIterator[TestClient[Any, Any]]:
    store = Store(None)
    api = Api(store, Registry())
    await api.create(NAMESPACE, "", {"metadata": {"name": "ns"}}, Ctx())
    await api.create(CRD, "", _crd(), Ctx())
    server = Server(store, api.registry, api, Hub(store))
    async with TestClient(TestServer(server.application())) as client:
        yield client


async def test_write_responses_equal_a_later_get_and_watch_events(
    http: TestClient[Any, Any],
) -> None:
    watch = await http.get(WIDGETS, params={"watch": "true", "timeoutSeconds": "5"})
    created = await http.post(WIDGETS, json=_widget(), params={"fieldManager": "m"})
    assert created.status == 201
    merge = {"Content-Type": MERGE}
    spec_patch = json.dumps({"spec": {"size": 3}})
    patched = await http.patch(f"{WIDGETS}/w", data=spec_patch, headers=merge)
    status_patch = json.dumps({"status": {"counts": {"z": 3}}})
    status = await http.patch(f"{WIDGETS}/w/status", data=status_patch, headers=merge)
    replaced = await http.put(f"{WIDGETS}/w", json={**await status.json(), "spec": {"size": 4}})
    got = await http.get(f"{WIDGETS}/w")
    assert await got.read() == await replaced.read()
    writes = [created, patched, status, replaced]
    raws = [await r.read() for r in writes]
    for raw in raws:
        assert raw == json.dumps(json.loads(raw), separators=(",", ":")).encode()
    lines = [await watch.content.readline() for _ in writes]
    assert [json.loads(line) for line in lines] == [
        {"type": kind, "object": json.loads(raw)}
        for kind, raw in zip(["ADDED", "MODIFIED", "MODIFIED", "MODIFIED"], raws, strict=True)
    ]
    for line in lines:
        assert line == json.dumps(json.loads(line), separators=(",", ":")).encode() + b"\n"
    watch.close()
