"""SQLite-backed object store with one global revision counter and a replayable change log.

The whole current state lives in memory; every write is committed to SQLite before it is
published to listeners (watches, the garbage collector). Writes made in one turn of the event
loop share one commit (``flush``, scheduled by the first of them): a commit costs as much as
the writes themselves, and the server answers a write only once it is committed.

The ``changes`` table's key *is* the resourceVersion, so revisions keep growing across
restarts; the log is trimmed to ``history`` entries, and a watch from before the trimmed
point (``floor``) must get 410 Gone.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import sqlite3
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kq import jsoncodec

Obj = dict[str, Any]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS changes(
  rv INTEGER PRIMARY KEY AUTOINCREMENT,
  resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
  type TEXT NOT NULL, body TEXT NOT NULL, prev_body TEXT);
CREATE TABLE IF NOT EXISTS objects(
  resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
  rv INTEGER NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY(resource, namespace, name)) WITHOUT ROWID;
"""

# How far the in-memory floor may run ahead of the rows deleted from SQLite.
_TRIM_BATCH = 512


class ObjectTooLarge(ValueError):
    """A write over ``Store.max_object``; nothing was stored."""


@dataclass(frozen=True)
class Change:
    """One committed write; ``obj`` is the new state (the last state for DELETED) and
    ``body`` its compact JSON."""

    rv: int
    resource: str
    namespace: str
    name: str
    type: str
    obj: Obj
    prev: Obj | None
    body: str


def owner_uids(obj: Obj | None) -> set[str]:
    if not obj:
        return set()
    refs = obj.get("metadata", {}).get("ownerReferences") or ()
    return {ref["uid"] for ref in refs if isinstance(ref, dict) and "uid" in ref}


class Store:
    """Current objects per storage key plus the change log since ``floor``."""

    def __init__(self, path: Path | None, history: int = 10_000) -> None:
        self._db = sqlite3.connect(str(path) if path else ":memory:")
        self._db.executescript("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;" + _SCHEMA)
        self.history_limit = history
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {}
        # The committed JSON of each current object, so that no state is encoded twice.
        self._bodies: dict[tuple[str, str, str], str] = {}
        self.by_uid: dict[str, tuple[str, str, str]] = {}
        self.dependents: dict[str, set[tuple[str, str, str]]] = {}
        self.history: deque[Change] = deque()
        self.rv = 0
        self.floor = 0
        self._db_floor = 0
        self.listeners: list[Callable[[Change], None]] = []
        # Writes of objects whose JSON exceeds this many bytes raise ObjectTooLarge.
        self.max_object: int | None = None
        self._unpublished: list[Change] = []
        self._flush_handle: asyncio.Handle | None = None
        self._flushed: asyncio.Future[None] | None = None
        self._load()

    # --- reads -------------------------------------------------------------------

    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        return self.objects.get(resource, {}).get((namespace, name))

    def select(self, resource: str, namespace: str | None = None) -> list[Obj]:
        items = self.objects.get(resource, {})
        keys = sorted(k for k in items if namespace is None or k[0] == namespace)
        return [items[k] for k in keys]

    def encoded(self, resource: str, obj: Obj) -> str | None:
        """The compact JSON of ``obj`` if it is the current stored object (else None)."""
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            return None
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        if self.objects.get(resource, {}).get((namespace, name)) is not obj:
            return None
        return self._bodies.get((resource, namespace, name))

    def since(self, rv: int) -> list[Change] | None:
        """Changes after ``rv``, or None when some of them were compacted away."""
        if rv < self.floor:
            return None
        start = bisect.bisect_right(self.history, rv, key=lambda c: c.rv)
        return list(self.history)[start:]

    def namespaced_keys(self, namespace: str) -> list[tuple[str, str]]:
        return [
            (resource, name)
            for resource, items in self.objects.items()
            for ns, name in items
            if ns == namespace
        ]

    # --- writes ------------------------------------------------------------------

    def put(self, resource: str, obj: Obj, prev: Obj | None) -> Change:
        """Store ``obj`` (new or replacing ``prev``) at the next revision."""
        meta = obj["metadata"]
        change = self._commit(resource, meta.get("namespace", ""), meta["name"], obj, prev)
        return change

    def remove(self, resource: str, obj: Obj) -> Change:
        meta = obj["metadata"]
        return self._commit(resource, meta.get("namespace", ""), meta["name"], None, obj)

    def compact(self, keep: int = 0) -> int:
        """Forget changes older than the last ``keep``; return the new floor."""
        while len(self.history) > keep:
            self.floor = self.history.popleft().rv
        if keep == 0:
            self.floor = self.rv
        self._trim(force=True)
        return self.floor

    # --- internals ---------------------------------------------------------------

    def _commit(
        self, resource: str, namespace: str, name: str, obj: Obj | None, prev: Obj | None
    ) -> Change:
        rv = self.rv + 1
        kind = "DELETED" if obj is None else ("ADDED" if prev is None else "MODIFIED")
        prev_body = None if prev is None else self._encode(resource, prev)
        # A DELETED state is a copy of the last one: it gets the delete's revision.
        state = obj if obj is not None else json.loads(prev_body or "null")
        state["metadata"]["resourceVersion"] = str(rv)
        body = _encode(state)
        if obj is not None and self.max_object is not None and len(body) > self.max_object:
            raise ObjectTooLarge(f"{len(body)} bytes")
        # The transaction is left open for ``flush``: sqlite3 begins one at the first write.
        self._db.execute(
            "INSERT INTO changes(rv, resource, namespace, name, type, body, prev_body)"
            " VALUES (?,?,?,?,?,?,?)",
            (rv, resource, namespace, name, kind, body, prev_body),
        )
        if obj is None:
            self._db.execute(
                "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?",
                (resource, namespace, name),
            )
        else:
            self._db.execute(
                "INSERT OR REPLACE INTO objects VALUES (?,?,?,?,?)",
                (resource, namespace, name, rv, body),
            )
        self.rv = rv
        self._index(resource, namespace, name, obj, prev)
        if obj is None:
            self._bodies.pop((resource, namespace, name), None)
        else:
            self._bodies[(resource, namespace, name)] = body
        change = Change(rv, resource, namespace, name, kind, state, prev, body)
        self.history.append(change)
        if len(self.history) > self.history_limit:
            self.floor = self.history.popleft().rv
            self._trim(force=False)
        self._unpublished.append(change)
        self._schedule_flush()
        return change

    def _schedule_flush(self) -> None:
        if self._flush_handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()  # no loop to batch in: commit and publish at once
            return
        self._flush_handle = loop.call_soon(self.flush)

    def flush(self) -> None:
        """Commit the writes made since the last flush, then publish them in order."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if not self._unpublished:
            return
        self._db.commit()
        changes, self._unpublished = self._unpublished, []
        waiter, self._flushed = self._flushed, None
        for change in changes:
            for listener in list(self.listeners):
                listener(change)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def flushed(self) -> None:
        """Return once every write made so far is committed."""
        if not self._unpublished:
            return
        if self._flushed is None:
            self._flushed = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._flushed)

    def _encode(self, resource: str, obj: Obj) -> str:
        found = self.encoded(resource, obj)
        return _encode(obj) if found is None else found

    def _index(
        self, resource: str, namespace: str, name: str, obj: Obj | None, prev: Obj | None
    ) -> None:
        key = (resource, namespace, name)
        items = self.objects.setdefault(resource, {})
        if prev is not None:
            self.by_uid.pop(prev["metadata"].get("uid", ""), None)
        if obj is None:
            items.pop((namespace, name), None)
        else:
            items[(namespace, name)] = obj
            self.by_uid[obj["metadata"].get("uid", "")] = key
        for uid in owner_uids(prev) - owner_uids(obj):
            deps = self.dependents.get(uid)
            if deps is not None:
                deps.discard(key)
                if not deps:
                    del self.dependents[uid]
        for uid in owner_uids(obj):
            self.dependents.setdefault(uid, set()).add(key)

    def _trim(self, *, force: bool) -> None:
        if not force and self.floor - self._db_floor < _TRIM_BATCH:
            return
        with self._db:
            self._db.execute("DELETE FROM changes WHERE rv <= ?", (self.floor,))
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('floor', ?)", (str(self.floor),))
        self._db_floor = self.floor

    def _load(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key='floor'").fetchone()
        self.floor = self._db_floor = int(row[0]) if row else 0
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='changes'").fetchone()
        self.rv = max(int(row[0]) if row else 0, self.floor)
        for resource, body in self._db.execute("SELECT resource, body FROM objects"):
            obj = json.loads(body)
            meta = obj["metadata"]
            self._index(resource, meta.get("namespace", ""), meta["name"], obj, None)
            self._bodies[(resource, meta.get("namespace", ""), meta["name"])] = body
        rows: Iterable[tuple[Any, ...]] = self._db.execute(
            "SELECT rv, resource, namespace, name, type, body, prev_body FROM changes"
            " WHERE rv > ? ORDER BY rv",
            (self.floor,),
        )
        for rv, resource, namespace, name, kind, body, prev in rows:
            self.history.append(
                Change(
                    rv,
                    resource,
                    namespace,
                    name,
                    kind,
                    json.loads(body),
                    json.loads(prev) if prev else None,
                    body,
                )
            )
        while len(self.history) > self.history_limit:
            self.floor = self.history.popleft().rv

    def close(self) -> None:
        self.flush()
        self._db.close()


def _encode(obj: Obj) -> str:
    return jsoncodec.dumps(obj).decode()
