"""Pure pieces of the embedded server: store revisions, watch transitions, durations, protobuf."""

from __future__ import annotations

from pathlib import Path

import pytest

from kq.sandbox.apiserver.protobuf import ProtobufError, decode
from kq.sandbox.apiserver.selectors import parse_field_selector, parse_label_selector
from kq.sandbox.apiserver.store import Store
from kq.sandbox.apiserver.tables import human_duration
from kq.sandbox.apiserver.watch import Filter, event_for


def _obj(name: str, **labels: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels}}


def test_store_revisions_history_and_compaction(tmp_path: Path) -> None:
    store = Store(tmp_path / "db", history=3)
    changes = [store.put("/configmaps", _obj(f"c{i}"), None) for i in range(5)]
    assert [c.rv for c in changes] == [1, 2, 3, 4, 5]
    assert store.since(1) is None  # rv 2 fell out of the 3 kept changes
    assert [c.rv for c in store.since(2) or []] == [3, 4, 5]
    store.close()
    reopened = Store(tmp_path / "db", history=10)
    assert reopened.rv == 5
    assert [o["metadata"]["name"] for o in reopened.select("/configmaps")] == [
        f"c{i}" for i in range(5)
    ]
    # Trimming is batched, so a reopened store may keep more history, never a gap.
    replay = reopened.since(1)
    assert replay is None or [c.rv for c in replay] == [2, 3, 4, 5]
    assert reopened.compact() == 5
    assert reopened.since(4) is None
    assert reopened.since(5) == []
    assert reopened.put("/configmaps", _obj("next"), None).rv == 6


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ({}, {"team": "a"}, "ADDED"),
        ({"team": "a"}, {"team": "a", "x": "y"}, "MODIFIED"),
        ({"team": "a"}, {"team": "b"}, "DELETED"),
        ({"team": "b"}, {"team": "c"}, None),
    ],
)
def test_selector_transitions(
    before: dict[str, str], after: dict[str, str], expected: str | None
) -> None:
    store = Store(None)
    first = store.put("/configmaps", _obj("m", **before), None)
    change = store.put("/configmaps", _obj("m", **after), first.obj)
    flt = Filter(None, parse_label_selector("team=a"), parse_field_selector(""), lambda o: {})
    event = event_for(change, flt)
    assert (event[0] if event else None) == expected
    if expected == "DELETED" and event is not None:
        assert event[1]["metadata"]["labels"] == before
        assert event[1]["metadata"]["resourceVersion"] == str(change.rv)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(5, "5s"), (119, "119s"), (185, "3m5s"), (600, "10m"), (3 * 3600 + 60, "3h1m"),
     (10 * 3600, "10h"), (50 * 3600, "2d2h"), (10 * 86400, "10d"), (800 * 86400, "2y70d")],
)  # fmt: skip
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_protobuf_namespace_envelope() -> None:
    body = bytes.fromhex(
        "6b387300"  # k8s\0
        "0a0f" "0a027631" "12094e616d657370616365"  # TypeMeta v1 Namespace
        "121e" "0a16" "0a067465616d2d61" "5a0c0a0161120762656c6f6e6773" "1200" "1a00"
        "1a00" "2200"
    )  # fmt: skip
    assert decode(body) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"a": "belongs"}},
    }
    with pytest.raises(ProtobufError):
        decode(b"{}")
