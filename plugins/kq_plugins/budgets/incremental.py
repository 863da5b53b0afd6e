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
                apply(ledger, current, new is None, now)
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
            ledger.entries = compact(prune(ledger.entries, start), start, now)
            ledger.touch()


def apply(ledger: Ledger, f: Facts, deleted: bool, now: float) -> None:
    """``controller.update`` for one workload: close its admission that ended, open the one
    that started, add one that started and finished between two looks; its hold, if any."""
    running = None if deleted or f.admitted_since is None else (f.uid, f.admitted_since)
    entries, known = [], set()
    for entry in ledger.entries:
        if entry.uid == f.uid and entry.end is None and (entry.uid, entry.start) != running:
            entry = entry.closed(ended_at(entry, None if deleted else f, now))
        entries.append(entry)
        known.add((entry.uid, entry.start))
    if running is not None and running not in known:
        bound = None if f.limit_left is None else running[1] + f.limit_left
        entries.append(Entry(f.key, f.uid, running[1], f.usage, bound_end=bound))
    span = None if deleted else f.finished_span
    if span is not None and (f.uid, span[0]) not in known:
        horizon = max((e.end or 0.0 for e in entries if e.total is not None), default=-1.0)
        if span[1] > horizon:
            entries.append(Entry(f.key, f.uid, span[0], f.usage, end=span[1]))
    ledger.entries = entries
    if f.holding and not deleted:
        ledger.holding[f.key] = need(f.usage, f.limit_left or 0.0)
    else:
        ledger.holding.pop(f.key, None)
    ledger.touch()


def _key(obj: Mapping[str, Any]) -> str:
    """The cache's key of a Workload (namespaced): ``namespace/name``."""
    return f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"
