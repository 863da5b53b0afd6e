"""The budgets' controller: keeps the book from the API, and each Budget's status in it.

On each tick (a change of a watched kind, or the window moving) it reads every Budget and
Workload from the informer caches, records admissions that started or ended in each budget's
ledger, writes the status of every budget whose figures moved, and asks the scheduler to try
the vetoed workloads again. The first time it sees a Budget it takes the ledger from its status:
a restarted or newly elected kq goes on counting where the last one stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import structlog

from kq.plugin import (
    BUDGETS,
    CLUSTER_QUEUES,
    COHORTS,
    LOWERED_BY_BUDGET_ANNOTATION,
    WORKLOADS,
    ApiError,
    BudgetError,
    ControllerContext,
    EventRecorder,
    Resource,
    Step,
    parse_budget,
)
from kq_plugins.budgets import metrics
from kq_plugins.budgets.book import Book, Ledger
from kq_plugins.budgets.incremental import Incremental
from kq_plugins.budgets.ledger import Entry, compact, need, prune
from kq_plugins.budgets.lowering import InMemory, annotations_of, lower_all, lower_in_memory
from kq_plugins.budgets.status import invalid, load_entries, render
from kq_plugins.budgets.workloads import Facts, ended_at, facts, limit_left

log = structlog.get_logger("kq_plugins.budgets")

MIN_GAP_S = 0.5
"""At least this long between ticks: a busy cluster changes Workloads all the time."""
MAX_TICK_S = 15.0


class BudgetController:
    NAME: ClassVar[str] = "budgets"
    WATCHES: ClassVar[tuple[Resource, ...]] = (BUDGETS, WORKLOADS, CLUSTER_QUEUES, COHORTS)
    book: ClassVar[Book | None] = None
    """The book the plugin's hooks read; set by the plugin module at import."""

    def __init__(self) -> None:
        # kq will run this controller: until its first sync, the veto cannot tell who fits.
        if self.book is not None:
            self.book.expected = True

    def _attach(self, ctx: ControllerContext) -> Book:
        """Point the book at the caches and the clock ``ctx`` gives."""
        book = self.book
        assert book is not None
        workloads = ctx.store(WORKLOADS)

        def seconds_left(key: str) -> float | None:
            obj = workloads.get(key)
            return None if obj is None else limit_left(obj)

        def budget_changed() -> None:
            book.stale = True

        def lowered_by(key: str) -> str | None:
            value = annotations_of(workloads.get(key)).get(LOWERED_BY_BUDGET_ANNOTATION)
            return None if value is None else str(value)

        book.clock = ctx.now
        book.seconds_left = seconds_left
        book.lowered_by = lowered_by
        ctx.on_change(BUDGETS, budget_changed)
        book.refresh = lambda: sync(
            book, ctx.store(BUDGETS).values(), workloads.values(), ctx, book.clock()
        )
        return book

    def simulate(self, ctx: ControllerContext) -> Step:
        """``kq simulate``: the veto brings the book up to date with the Workloads that
        changed since the last one (``incremental``); time is the virtual clock."""
        book = self._attach(ctx)
        book.reset()
        # The simulator lowers its own Workloads when it can; else LowerPriority waits.
        book.can_lower = isinstance(ctx, InMemory)
        kept = Incremental(book, ctx, book.refresh)
        book.refresh = kept.refresh

        def workload_changed() -> None:
            # Without Budgets there is nothing to bring up to date.
            if book.ledgers:
                book.stale = True

        ctx.on_change(WORKLOADS, workload_changed)
        book.refresh()
        book.ready = True

        def step(now: float) -> float | None:
            kept.step(now)
            if lower_in_memory(ctx, book):
                # As kq run's controller after the cycle that vetoed them: lowered workloads
                # are tried again at once, at this same instant.
                ctx.retry_vetoed()
                return now
            if not book.vetoed:
                return None
            book.vetoed = False
            ctx.retry_vetoed()
            return now + tick_seconds(book)

        return step

    async def run(self, ctx: ControllerContext) -> None:
        book = self._attach(ctx)
        wake = asyncio.Event()
        for resource in self.WATCHES:
            ctx.on_change(resource, wake.set)
        book.poke, book.can_lower = wake.set, True
        events = EventRecorder(ctx.client, "kq-budgets")
        written: dict[str, Any] = {}
        while True:
            now = book.clock()
            book.refresh()
            book.ready = True
            await _write_all(ctx, book, now, written)
            if await lower_all(ctx, book, events) or book.vetoed:
                book.vetoed = False
                ctx.retry_vetoed()
            metrics.ticks.inc()
            try:
                async with asyncio.timeout(tick_seconds(book)):
                    await wake.wait()
            except TimeoutError:
                pass
            wake.clear()
            await asyncio.sleep(MIN_GAP_S)


def tick_seconds(book: Book) -> float:
    """Often enough that a window's roll-over or ageing is seen within a 50th of it."""
    windows = [ledger.budget.window.seconds / 50 for ledger in book.ledgers.values()]
    return max(MIN_GAP_S, min([MAX_TICK_S, *windows]))


def sync(
    book: Book,
    budgets: Iterable[Mapping[str, Any]],
    workloads: Iterable[Mapping[str, Any]],
    ctx: ControllerContext,
    now: float,
) -> None:
    """Bring every ledger up to date with the Budgets and Workloads as the caches hold them."""
    book.stale = False
    budgets = list(budgets)
    if not budgets and not book.ledgers:
        return  # no Budget: reading every Workload on each tick would buy nothing
    book.cohort_parents = _cohort_parents(ctx)
    cq_cohorts = {
        str(o["metadata"]["name"]): (o.get("spec") or {}).get("cohort")
        for o in ctx.store(CLUSTER_QUEUES).values()
    }
    seen = [facts(o) for o in workloads]
    # Virtual time starts at 0: an admission at 0.0 is one all the same.
    held = (f for f in seen if f.admitted_since is not None or f.holding or f.finished_span)
    book.seen_holding({f.key for f in held})
    present = set()
    for obj in budgets:
        name = str(obj["metadata"]["name"])
        try:
            budget = parse_budget(obj)
        except BudgetError:
            book.ledgers.pop(name, None)
            continue
        present.add(name)
        ledger = book.ledgers.get(name)
        if ledger is None:
            ledger = book.ledgers[name] = Ledger(budget, load_entries(obj))
        ledger.budget = budget  # update() below drops the account it had
        mine = [
            f for f in seen
            if ledger in book.covering(f.namespace, f.queue, f.cluster_queue or "",
                                       cq_cohorts.get(f.cluster_queue or ""))
        ]  # fmt: skip
        update(ledger, mine, now)
    for name in set(book.ledgers) - present:
        del book.ledgers[name]


def update(ledger: Ledger, workloads: list[Facts], now: float) -> None:
    """Open an entry for each admission the ledger lacks, close those that ended, prune."""
    running = {(f.uid, f.admitted_since): f for f in workloads if f.admitted_since is not None}
    by_uid = {f.uid: f for f in workloads}
    entries: list[Entry] = []
    for entry in ledger.entries:
        if entry.end is None and (entry.uid, entry.start) not in running:
            entry = entry.closed(ended_at(entry, by_uid.get(entry.uid), now))
        entries.append(entry)
        running.pop((entry.uid, entry.start), None)
    for (uid, start), f in running.items():
        assert start is not None
        bound = None if f.limit_left is None else start + f.limit_left
        entries.append(Entry(f.key, uid, start, f.usage, bound_end=bound))
    known = {(e.uid, e.start) for e in entries}
    # Compaction merges the oldest closed entries: what ended by then is in them already.
    horizon = max((e.end or 0.0 for e in entries if e.total is not None), default=float("-inf"))
    for f in workloads:  # admitted and finished between two ticks
        span = f.finished_span
        if span is not None and (f.uid, span[0]) not in known and span[1] > horizon:
            entries.append(Entry(f.key, f.uid, span[0], f.usage, end=span[1]))
    start = ledger.budget.window.start(now)
    ledger.entries = compact(prune(entries, start), start, now)
    ledger.holding = {f.key: need(f.usage, f.limit_left or 0.0) for f in workloads if f.holding}
    ledger.touch()


def _due(
    current: Mapping[str, Any],
    new: Mapping[str, Any],
    last: tuple[Mapping[str, Any], float] | None,
    now: float,
    period: float,
) -> bool:
    """Whether to write: the ledger, a condition or the window moved, or the figures are older
    than a tick (they grow continuously while anything runs; each change is not worth a write)."""
    if current == new or (last is not None and last[0] == new):
        return False
    steady = ("admissions", "conditions", "windowEnd", "observedGeneration")
    if any(current.get(k) != new.get(k) for k in steady) or last is None:
        return True
    return now - last[1] >= period


def _cohort_parents(ctx: ControllerContext) -> dict[str, str | None]:
    parents = {}
    for obj in ctx.store(COHORTS).values():
        spec = obj.get("spec") or {}
        parents[str(obj["metadata"]["name"])] = spec.get("parentName") or spec.get("parent")
    return parents


async def _write_all(
    ctx: ControllerContext, book: Book, now: float, written: dict[str, Any]
) -> None:
    for obj in ctx.store(BUDGETS).values():
        name = str(obj["metadata"]["name"])
        ledger = book.ledgers.get(name)
        if ledger is None:
            try:
                parse_budget(obj)
            except BudgetError as exc:
                status = invalid(str(exc), now, obj)
            else:
                continue
        else:
            account = ledger.account(now, book.granted(name))
            status = render(ledger.budget, ledger.entries, account, now, obj)
            metrics.observe(ledger.budget, account)
        status["observedGeneration"] = obj["metadata"].get("generation", 0)
        if not _due(obj.get("status") or {}, status, written.get(name), now, tick_seconds(book)):
            continue
        try:
            await ctx.client.merge_patch(
                BUDGETS,
                name,
                {"status": status},
                resource_version=obj["metadata"].get("resourceVersion"),
                subresource="status",
            )
            written[name] = (status, now)
        except ApiError as exc:  # 409: the watch brings the newer object, and another tick
            if exc.status not in (404, 409):
                log.warning("budget status not written", budget=name, error=str(exc))
    metrics.forget(set(book.ledgers))
