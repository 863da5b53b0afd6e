"""The store's indexes stay in step with upserts, removals and relists."""

from __future__ import annotations

from typing import Any

from kq.runtime.store import NAMESPACE_INDEX, OWNER_INDEX, EventType, Store
from tests.runtime.stub import obj


def owned(name: str, rv: str, owner: str, namespace: str = "ns") -> dict[str, object]:
    item = obj(name, rv, namespace)
    item["metadata"]["ownerReferences"] = [{"uid": owner, "kind": "Job", "name": owner}]
    return item


def names(objects: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects)


def test_indexes_follow_changes() -> None:
    store = Store()
    store.add_index("queue", lambda o: [o.get("spec", {}).get("queueName", "")])
    store.upsert(owned("a", "1", "job-1"))
    store.upsert(owned("b", "1", "job-1", namespace="other"))
    store.upsert({**owned("a", "2", "job-2"), "spec": {"queueName": "q"}})
    assert names(store.by_index(OWNER_INDEX, "job-1")) == ["b"]
    assert names(store.by_index(OWNER_INDEX, "job-2")) == ["a"]
    assert names(store.by_index("queue", "q")) == ["a"]
    change = store.remove(obj("b", "9", "other"))
    assert change.type is EventType.DELETED
    assert change.obj["metadata"]["resourceVersion"] == "1"
    assert store.by_index(NAMESPACE_INDEX, "other") == []
    assert store.keys() == ["ns/a"]


def test_replace_reports_only_differences() -> None:
    store = Store()
    for item in (obj("a", "1"), obj("b", "1"), obj("c", "1")):
        store.upsert(item)
    changes = store.replace([obj("a", "1"), obj("b", "2"), obj("d", "1")])
    summary = [(c.type, c.obj["metadata"]["name"]) for c in changes]
    assert summary == [(EventType.MODIFIED, "b"), (EventType.ADDED, "d"), (EventType.DELETED, "c")]
    assert sorted(store.keys()) == ["ns/a", "ns/b", "ns/d"]


def test_index_added_late_covers_cached_objects() -> None:
    store = Store()
    store.upsert(obj("a", "1", "x"))
    store.add_index("first-letter", lambda o: [o["metadata"]["name"][0]])
    assert names(store.by_index("first-letter", "a")) == ["a"]
