"""The pending workloads of one ClusterQueue: ordered heaps plus the parked inadmissible."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from kq.queue.requeue import RequeueReason
from kq.queue.strategy import QueueingStrategy, ordering, orders_as_kueue
from kq.workload.info import Shape, WorkloadInfo, same_for_queueing

_sequence = itertools.count()
# The reasons that say a workload's shape does not fit now, whoever carries it.
_SHAPE_FAILED = (RequeueReason.NO_FIT, RequeueReason.PREEMPTION_NO_CANDIDATES)

PARKED_WORDS_AFTER_S = 5.0
"""How long a shape stays parked before the workloads behind its head are told its words."""
_NEVER = float("inf")

_Entry = tuple[Any, ...]
"""A heap entry: the order's key, then a sequence number, then the workload's key (among the
heads: its shape). Kueue's default order's key is spread flat in it, so comparing two entries
compares its items once; any other order's key is one item, as its keys may vary in length.
Not a fixed-length tuple type: compiled, those are unboxed and boxed anew at every use."""
Words = tuple[str, str]
"""A pending reason and message, as a cycle gave them to a head that did not fit."""


class PendingQueue:
    """Heap order: sticky preemptor, then priority desc, queue time asc, UID.

    Queued workloads sit in one heap per scheduling shape, and a heap of the shapes' heads
    picks among the shapes that are not parked. Parking a shape that failed (BestEffortFIFO,
    as Kueue's SchedulingEquivalenceHashing) and releasing it on a requeue then cost one step
    per shape, not one per workload. Replaced or removed workloads leave stale entries that
    ``pop`` skips.
    """

    def __init__(self, name: str, strategy: QueueingStrategy) -> None:
        self.name = name
        self.strategy = strategy
        self._order = ordering(strategy)
        self._flat = orders_as_kueue(strategy)
        self._queued: dict[str, tuple[WorkloadInfo, int]] = {}
        self._shapes: dict[Shape, list[_Entry]] = {}
        self._shape_sizes: dict[Shape, int] = {}
        self._heads: list[_Entry] = []
        # Per shape, its one live entry in ``_heads`` (order, sequence): any other is stale.
        # The live entry is never worse than its shape's head, so one per shape is enough.
        self._offered: dict[Shape, tuple[Any, ...]] = {}
        self.parked_shapes: set[Shape] = set()
        """Shapes that failed since the last requeue: their workloads, arrivals too, wait."""
        # No cycle tries a parked shape's other workloads, so nothing else would say why they
        # wait: they are told the words of the head that parked it, each once, without a try.
        # Per parked shape, its head's words and when they come due.
        self._parked_words: dict[Shape, tuple[Words, float]] = {}
        self._words_due = _NEVER  # no parked shape's words come due before this
        # Per shape, its queued workloads that were neither tried nor told: kept across
        # requeues, so neither a release nor a cycle costs a walk over waiting workloads.
        self._untold: dict[Shape, set[str]] = {}
        # Shapes released early since the last requeue (``release_shapes``) and not yet paid
        # off by an admission: one that failed again is not released early before the requeue.
        self._early: set[Shape] = set()
        self.inadmissible: dict[str, WorkloadInfo] = {}
        """Workloads parked one by one (not by shape) until a requeue or their own update."""
        self.inflight: dict[str, WorkloadInfo] = {}
        self._requeue_generation = 0
        self._popped_at: dict[str, int] = {}
        self.preemptor: str | None = None
        """The last head that issued preemptions, until admitted or deleted: its cycle entry
        goes first (Kueue's PrioritizePreemptorWorkloads), so another ClusterQueue's head
        cannot take the quota its victims free and be preempted back (Kueue#13662)."""
        self.sticky: str | None = None
        """The preemptor when the strategy keeps it first in its queue: popped first while it
        stays pending."""

    def __len__(self) -> int:
        return len(self._queued) + len(self.inadmissible) + len(self.inflight)

    def parked_count(self) -> int:
        """Pending workloads no cycle will look at before a requeue."""
        sizes = self._shape_sizes
        return len(self.inadmissible) + sum(sizes.get(s, 0) for s in self.parked_shapes)

    def has_parked(self) -> bool:
        return bool(self.parked_shapes or self.inadmissible)

    def untried_count(self) -> int:
        """Queued workloads a next cycle could pop."""
        return len(self._queued) - (self.parked_count() - len(self.inadmissible))

    def is_parked(self, key: str) -> bool:
        if key in self.inadmissible:
            return True
        entry = self._queued.get(key)
        return entry is not None and entry[0].shape in self.parked_shapes

    def add(self, info: WorkloadInfo, parked: WorkloadInfo | None = None) -> None:
        """Queue a new or updated workload (``parked``: its previous version, if parked here
        one by one): parked still if nothing that decides its fit changed, as upstream."""
        if parked is not None and same_for_queueing(parked, info):
            self.park(info)
            return
        self.push(info)
        if info.obj.says_it_waits:
            # Told already (our own write coming back, mostly): it keeps its words until it is
            # tried, as a workload Kueue has not tried again keeps its last ones.
            return
        self._untold.setdefault(info.shape, set()).add(info.key)
        shape_words = self._parked_words.get(info.shape)
        if shape_words is not None:
            self._words_due = min(self._words_due, shape_words[1])

    def push(self, info: WorkloadInfo) -> None:
        """Add or replace ``info`` among the queued (leaving any parked or in-flight copy)."""
        self.inadmissible.pop(info.key, None)
        self.inflight.pop(info.key, None)
        self._unqueue(info.key)
        seq = next(_sequence)
        self._queued[info.key] = (info, seq)
        shape = info.shape
        order = self._order(info) if self._flat else (self._order(info),)
        heapq.heappush(self._shapes.setdefault(shape, []), (*order, seq, info.key))
        self._shape_sizes[shape] = self._shape_sizes.get(shape, 0) + 1
        if shape not in self.parked_shapes:
            self._offer(shape, order, seq)

    def _unqueue(self, key: str) -> WorkloadInfo | None:
        """Out of the queued set (its heap entries go stale); returns what it was."""
        entry = self._queued.pop(key, None)
        if entry is None:
            return None
        shape = entry[0].shape
        left = self._shape_sizes[shape] - 1
        if left:
            self._shape_sizes[shape] = left
            untold = self._untold.get(shape)
            if untold:
                untold.discard(key)
        else:
            del self._shape_sizes[shape], self._shapes[shape]
            self._untold.pop(shape, None)
        return entry[0]

    def delete(self, key: str) -> bool:
        found = self._unqueue(key) is not None
        found |= self.inadmissible.pop(key, None) is not None
        found |= self.inflight.pop(key, None) is not None
        self._popped_at.pop(key, None)
        self._forget_preemptor(key)
        return found

    def contains(self, key: str) -> bool:
        return key in self._queued or key in self.inadmissible or key in self.inflight

    def pop(self) -> WorkloadInfo | None:
        # The sticky preemptor comes first while it may be tried, not while its shape is
        # parked: as in Kueue, where it waits among the inadmissible (it would fail alike).
        if self.sticky is not None and self._may_try(self.sticky):
            info = self._unqueue(self.sticky)
            assert info is not None
            self._reheads(info.shape)
            return self._in_flight(info)
        heads, offered = self._heads, self._offered
        while heads:
            entry = heapq.heappop(heads)
            seq, shape = entry[-2], entry[-1]
            live = offered.get(shape)
            if live is None or live[-1] != seq:
                continue  # superseded by a better entry of its shape
            del offered[shape]
            if shape in self.parked_shapes:
                continue  # released shapes come back with their current head
            top = self._top(shape)
            if top is None:
                continue
            if top[-2] != seq:
                # Its head left: the shape's new head is no better, so it queues from here.
                self._offer(shape, top[:-2], top[-2])
                continue
            heapq.heappop(self._shapes[shape])
            info = self._unqueue(top[-1])
            assert info is not None
            self._reheads(shape)
            return self._in_flight(info)
        return None

    def _may_try(self, key: str) -> bool:
        """Queued, and not in a parked shape."""
        entry = self._queued.get(key)
        return entry is not None and entry[0].shape not in self.parked_shapes

    def _top(self, shape: Shape) -> _Entry | None:
        """The shape's head entry, after dropping stale ones."""
        entries = self._shapes.get(shape)
        while entries:
            top = entries[0]
            current = self._queued.get(top[-1])
            if current is not None and current[1] == top[-2]:
                return top
            heapq.heappop(entries)
        return None

    def _reheads(self, shape: Shape) -> None:
        """Offer the shape's new head to the heap of heads, unless the shape is parked."""
        if shape in self.parked_shapes:
            return
        top = self._top(shape)
        if top is not None:
            self._offer(shape, top[:-2], top[-2])

    def _offer(self, shape: Shape, order: tuple[Any, ...], seq: int) -> None:
        """Make (order, seq) the shape's entry among the heads, if better than its live one."""
        mine = (*order, seq)
        live = self._offered.get(shape)
        if live is not None and live <= mine:
            return
        self._offered[shape] = mine
        heapq.heappush(self._heads, (*mine, shape))

    def _in_flight(self, info: WorkloadInfo) -> WorkloadInfo:
        self.inflight[info.key] = info
        self._popped_at[info.key] = self._requeue_generation
        return info

    def requeue(
        self,
        info: WorkloadInfo,
        reason: RequeueReason,
        words: Words | None = None,
        now: float = 0.0,
    ) -> None:
        """Return a head after a cycle: back to the heap, or parked, as the strategy says.
        ``words``: what the cycle said of it, which a shape parked with it passes on from
        ``now`` (the cycle's time) on."""
        if self.inflight.pop(info.key, None) is None:
            return  # deleted or replaced while in flight
        popped_at = self._popped_at.pop(info.key, -1)
        if reason is RequeueReason.PENDING_PREEMPTION:
            self.preemptor = info.key
            self.sticky = info.key if self.strategy.STICKY_PREEMPTOR else None
        if self.strategy.requeue_immediately(reason) or popped_at < self._requeue_generation:
            self.push(info)
        elif reason in _SHAPE_FAILED and self.strategy.PARKS_EQUIVALENT:
            # Every workload of this shape would fail the same way until a requeue.
            self.parked_shapes.add(info.shape)
            self.push(info)
            if words is not None:
                due = now + PARKED_WORDS_AFTER_S
                self._parked_words[info.shape] = (words, due)
                if self._untold.get(info.shape):
                    self._words_due = min(self._words_due, due)
        else:
            self.inadmissible[info.key] = info

    def held_behind(self, head: str, reason: RequeueReason) -> list[WorkloadInfo]:
        """The queued workloads that wait behind the head ``head``, requeued for ``reason``.

        Only a head that cannot fit and went straight back to the heap (StrictFIFO) holds the
        others: it is popped again first, so no cycle looks at them and nothing else would
        say why they wait. A head parked or sent back for a passing reason holds nobody.
        """
        if reason not in _SHAPE_FAILED or not self.strategy.requeue_immediately(reason):
            return []
        if head not in self._queued or self.is_parked(head):
            return []
        return [info for key, (info, _) in self._queued.items() if key != head]

    def take_parked_words(self, now: float) -> list[tuple[WorkloadInfo, Words]]:
        """Queued workloads to be told their parked shape's words, each handed out once, once
        the shape has stayed parked ``PARKED_WORDS_AFTER_S``: a shape released again sooner
        is tried again soon, and its workloads, like Kueue's untried ones, need no words."""
        if not self.words_due(now):
            return []
        told: list[tuple[WorkloadInfo, Words]] = []
        due = _NEVER
        for shape, (words, at) in self._parked_words.items():
            untold = self._untold.get(shape)
            if not untold:
                continue
            if at <= now:
                told.extend((self._queued[key][0], words) for key in untold)
                del self._untold[shape]
            else:
                due = min(due, at)
        self._words_due = due
        return told

    def words_due(self, now: float) -> bool:
        """Some parked shape's words are due to a workload at ``now``."""
        return now >= self._words_due

    def has_words_to_tell(self) -> bool:
        return self._words_due != _NEVER

    def done(self, key: str) -> None:
        """The head was admitted; it leaves the queue."""
        info = self.inflight.pop(key, None)
        if info is not None:
            self._early.discard(info.shape)  # an early release paid off: it may come again
        self._popped_at.pop(key, None)
        self._forget_preemptor(key)

    def _forget_preemptor(self, key: str) -> None:
        if key == self.preemptor:
            self.preemptor = self.sticky = None

    def requeue_inadmissible(self) -> int:
        """Move every parked workload back to the heap; counts as an event for in-flight heads."""
        self._requeue_generation += 1
        if not self.has_parked():
            return 0  # the common case on every release: nothing is parked here
        moved = 0
        for shape in self.parked_shapes:
            moved += self._shape_sizes.get(shape, 0)
        shapes, self.parked_shapes = self.parked_shapes, set()
        self._parked_words.clear()
        self._early.clear()
        self._words_due = _NEVER
        for shape in shapes:
            self._reheads(shape)
        parked = [i for i in self.inadmissible.values() if not i.obj.awaiting_requeue]
        for info in parked:
            self.push(info)
        return moved + len(parked)

    def early_candidates(self) -> list[tuple[WorkloadInfo, bool]]:
        """The heads of parked shapes in queue order, each with whether it may be released
        before the next requeue (not if it was, and failed again)."""
        heads: list[WorkloadInfo] = []
        for shape in self.parked_shapes:
            top = self._top(shape)
            if top is not None:
                heads.append(self._queued[top[-1]][0])
        if len(heads) > 1:
            heads.sort(key=self._order)
        early = self._early
        return [(head, head.shape not in early) for head in heads]

    def release_shapes(self, shapes: Iterable[Shape]) -> None:
        """Release these parked shapes ahead of the next requeue (``kq.scheduler.early``)."""
        for shape in shapes:
            if shape in self.parked_shapes:
                self.parked_shapes.discard(shape)
                self._parked_words.pop(shape, None)
                self._early.add(shape)
                self._reheads(shape)

    def park(self, info: WorkloadInfo) -> None:
        """Hold a workload outside the heap until a requeue (or its own update) moves it."""
        self.delete(info.key)
        self.inadmissible[info.key] = info

    def pending(self) -> list[WorkloadInfo]:
        """All pending workloads in heap order (for status and visibility)."""
        return sorted(self.unordered(), key=self._order)

    def unordered(self) -> Iterator[WorkloadInfo]:
        """All pending workloads, in no order: sums and counts need no sort."""
        yield from (info for info, _ in self._queued.values())
        yield from self.inadmissible.values()
        yield from self.inflight.values()

    def set_strategy(self, strategy: QueueingStrategy) -> None:
        """Switch strategies; the queued are re-ordered if the order changed."""
        self.strategy = strategy
        order = ordering(strategy)
        if order != self._order:
            self._order = order
            self._flat = orders_as_kueue(strategy)
            # Rebuilt, not re-pushed over the old heaps: keys of two orders may not compare
            # (a plugin's may be strings), and re-queueing tries or tells none of them.
            queued = list(self._queued.values())
            self._queued, self._shapes, self._shape_sizes = {}, {}, {}
            self._heads, self._offered = [], {}
            for info, _ in queued:
                self.push(info)
