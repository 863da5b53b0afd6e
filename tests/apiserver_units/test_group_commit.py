"""Writes made in one turn of the event loop share a commit, published only once committed."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from kq.sandbox.apiserver.selectors import parse_field_selector, parse_label_selector
from kq.sandbox.apiserver.store import Change, Store
from kq.sandbox.apiserver.watch import Filter, Hub


def cm(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}}


def committed_names(path: Path) -> set[str]:
    with sqlite3.connect(path) as other:
        return {row[0] for row in other.execute("SELECT name FROM objects")}


async def test_writes_of_one_turn_are_committed_then_published_together(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    published: list[tuple[str, set[str]]] = []

    def listener(change: Change) -> None:
        published.append((change.name, committed_names(tmp_path / "db")))

    store.listeners.append(listener)
    store.put("configmaps", cm("a"), None)
    store.put("configmaps", cm("b"), None)
    assert published == []
    assert committed_names(tmp_path / "db") == set()
    await store.flushed()
    # Both in one commit, seen by the listener only once another connection can read them.
    assert published == [("a", {"a", "b"}), ("b", {"a", "b"})]
    store.close()


async def test_a_watch_opened_before_the_commit_sees_each_change_once() -> None:
    store = Store(None)
    hub = Hub(store)
    store.put("configmaps", cm("a"), None)
    everything = Filter(None, parse_label_selector(""), parse_field_selector(""), lambda o: {})
    sub = hub.subscribe("configmaps", everything, since=0)
    assert sub is not None
    store.put("configmaps", cm("b"), None)
    await store.flushed()
    names = []
    while not sub.queue.empty():
        event = sub.queue.get_nowait()
        assert event is not None
        names.append(event[1]["metadata"]["name"])
    assert names == ["a", "b"]


def test_without_an_event_loop_each_write_commits_at_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.put("configmaps", cm("a"), None)
    assert committed_names(tmp_path / "db") == {"a"}
    store.close()


async def test_closing_commits_what_is_pending(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.put("configmaps", cm("a"), None)
    store.close()
    assert committed_names(tmp_path / "db") == {"a"}
    await asyncio.sleep(0)  # the scheduled flush finds nothing left to do
