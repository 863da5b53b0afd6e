"""The book kept up to date one Workload at a time, for ``kq simulate``.

``controller.sync`` reads every Workload; a veto after each change would make a simulation
quadratic in its workloads. Here the Workloads' cache tells which keys changed since the last
veto (an index function is the one place a ``Store`` calls back with the object, on every
upsert and removal), and only those are applied to the ledgers that cover them, with the same
rules as ``controller.update``. A change of a Budget, ClusterQueue or Cohort (what decides who
is covered) brings back one full sync.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kq.plugin import BUDGETS, CLUSTER_QUEUES, COHORTS, WORKLOADS, ControllerContext
from kq_plugins.budgets.book import Book, Ledger
from kq_plugins.budgets.ledger import Entry, compact, need, prune
from kq_plugins.budgets.workloads import Facts, ended_at, facts

CHANGED_INDEX = "budgets.changed"


class Incremental:
    """``refresh`` for the book: a full sync when the scope may have moved, else the changes."""

    def __init__(self, book: Book, ctx: ControllerContext, full: Callable[[], None]) -> None:
        self.book, self.ctx, self.full = book, ctx, full
        self.changed: set[str] = set()
        self.known: dict[str, Facts] = {}
        self.cohorts: dict[str, str | None] = {}
        self.indexes: dict[int, Index] = {}
        """Per ledger (by identity), where its admissions are; made again when its entries are."""
        self.scope_moved = True
        ctx.store(WORKLOADS).add_index(CHANGED_INDEX, self._note)
        for resource in (BUDGETS, CLUSTER_QUEUES, COHORTS):
            ctx.on_change(resource, self._rescope)

    def _note(self, obj: dict[str, Any]) -> Iterable[str]:
        if self.book.ledgers or self.scope_moved:
            self.changed.add(_key(obj))
        return ()

    def _rescope(self) -> None:
        self.scope_moved = self.book.stale = True

    def refresh(self) -> None:
        book = self.book
        if self.scope_moved:
            self.full()
            self.scope_moved = False
            self.changed.clear()
            self.known = {_key(o): facts(o) for o in self.ctx.store(WORKLOADS).values()}
            self.cohorts = {
                str(o["metadata"]["name"]): (o.get("spec") or {}).get("cohort")
                for o in self.ctx.store(CLUSTER_QUEUES).values()
            }
            self._index()
            return
        book.stale = False
        now, store = book.clock(), self.ctx.store(WORKLOADS)
        changed, self.changed = self.changed, set()
        seen = set()
        for key in changed:
            obj = store.get(key)
            new = None if obj is None else facts(obj)
            old = self.known.pop(key, None)
            if new is not None:
                self.known[key] = new
                if new.admitted_since is not None or new.holding or new.finished_span:
                    seen.add(key)
            current = new or old
            if current is None:
                continue  # came and went between two looks: nothing to count
            for ledger in {**self._covering(old), **self._covering(new)}.values():
                apply(ledger, self.indexes[id(ledger)], current, new is None, now)
        book.seen_holding(seen)

    def _covering(self, f: Facts | None) -> dict[int, Ledger]:
        """The ledgers covering ``f``, by identity (a ledger is not hashable)."""
        if f is None:
            return {}
        cq = f.cluster_queue or ""
        found = self.book.covering(f.namespace, f.queue, cq, self.cohorts.get(cq))
        return {id(ledger): ledger for ledger in found}

    def step(self, now: float) -> None:
        """Drop what left the windows and merge old entries, as each full sync does."""
        for ledger in self.book.ledgers.values():
            start = ledger.budget.window.start(now)
            kept = compact(prune(ledger.entries, start), start, now)
            if len(kept) != len(ledger.entries):  # both only ever take entries away
                ledger.entries = kept
                ledger.touch()
                self.indexes[id(ledger)] = Index.of(kept)

    def _index(self) -> None:
        self.indexes = {
            id(ledger): Index.of(ledger.entries) for ledger in self.book.ledgers.values()
        }


Key = tuple[str, float]
"""An admission: the workload's uid and when it started."""


@dataclass
class Index:
    """Where each admission of one ledger is, so that one workload's change costs no scan."""

    at: dict[Key, int] = field(default_factory=dict)
    open: dict[str, list[Key]] = field(default_factory=dict)
    """Per uid, its admissions still running."""
    horizon: float = -1.0
    """The last end merged into a compacted entry: what ended by then is in one already."""

    @classmethod
    def of(cls, entries: list[Entry]) -> Index:
        index = cls()
        for i, entry in enumerate(entries):
            index.add(entry, i)
            if entry.total is not None:
                index.horizon = max(index.horizon, entry.end or 0.0)
        return index

    def add(self, entry: Entry, at: int) -> None:
        key = (entry.uid, entry.start)
        self.at[key] = at
        if entry.end is None:
            self.open.setdefault(entry.uid, []).append(key)


def apply(ledger: Ledger, index: Index, f: Facts, deleted: bool, now: float) -> None:
    """``controller.update`` for one workload: close its admission that ended, open the one
    that started, add one that started and finished between two looks; its hold, if any."""
    running = None if deleted or f.admitted_since is None else (f.uid, f.admitted_since)
    entries = ledger.entries
    for key in index.open.pop(f.uid, []):
        if key == running:
            index.open.setdefault(f.uid, []).append(key)
            continue
        i, old = index.at[key], entries[index.at[key]]
        entries[i] = old.closed(ended_at(old, None if deleted else f, now))
        ledger.replaced(now, old, entries[i])
    added = []
    if running is not None and running not in index.at:
        bound = None if f.limit_left is None else running[1] + f.limit_left
        added.append(Entry(f.key, f.uid, running[1], f.usage, bound_end=bound))
    span = None if deleted else f.finished_span
    if span is not None and (f.uid, span[0]) not in index.at and span[1] > index.horizon:
        added.append(Entry(f.key, f.uid, span[0], f.usage, end=span[1]))
    for entry in added:
        entries.append(entry)
        index.add(entry, len(entries) - 1)
        ledger.replaced(now, None, entry)
    if f.holding and not deleted:
        ledger.holding[f.key] = need(f.usage, f.limit_left or 0.0)
    else:
        ledger.holding.pop(f.key, None)


def _key(obj: Mapping[str, Any]) -> str:
    """The cache's key of a Workload (namespaced): ``namespace/name``."""
    return f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
