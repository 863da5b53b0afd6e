"""The order of a cycle's entries under fair sharing: a tournament up each cohort tree.

Each pop computes, for every remaining entry of a cohort tree, the share of its ClusterQueue
and of each Cohort above it as if the entry were admitted; each Cohort's children then play
off: a preemptor waiting for its victims first (Kueue's PrioritizePreemptorWorkloads), then
one whose child is not borrowing any flavor-resource the entry requests first (Kueue's
FairSharingPrioritizeNonBorrowing, on by default since v0.17), then lower share, then higher
priority, then earlier queue time, and the winner moves up until one entry is left at the
root. Shares are recomputed at every pop because the entries admitted before it changed the
usage (Kueue's fair sharing iterator).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from kq.cache.fair_share import DRS, compare, dominant_resource_share
from kq.cache.quota_tree import QuotaNode
from kq.cache.snapshot import Snapshot

if TYPE_CHECKING:
    from kq.scheduler.cycle import Entry


def fair_order(snapshot: Snapshot, entries: Sequence[Entry]) -> Iterator[Entry]:
    """Every entry once; the next one is chosen only when the previous one was decided."""
    remaining = {entry.cq.name: entry for entry in entries}
    while remaining:
        entry = next(iter(remaining.values()))
        node = entry.cq.node
        if node.parent is not None:
            shares = _shares(snapshot, node.root(), remaining)
            winner = _tournament(node.root(), remaining, shares)
            entry = winner if winner is not None else entry
        del remaining[entry.cq.name]
        yield entry


Shares = dict[tuple[str, str], DRS]
"""(parent cohort, workload key) → the DRS of the parent's child on the entry's path."""


def _shares(snapshot: Snapshot, root: QuotaNode, remaining: dict[str, Entry]) -> Shares:
    book = snapshot.usage
    shares: Shares = {}
    for entry in remaining.values():
        node = entry.cq.node
        if node.root() is not root:
            continue
        usage = entry.assignment.usage
        book.add(node, usage)
        child: QuotaNode = node
        share = dominant_resource_share(book, node)
        while child.parent is not None:
            shares[(child.parent.name, entry.info.key)] = share
            child = child.parent
            share = dominant_resource_share(book, child)
        book.add(node, usage, -1)
    return shares


def _tournament(cohort: QuotaNode, remaining: dict[str, Entry], shares: Shares) -> Entry | None:
    candidates = []
    for child in cohort.children:
        if child.is_cluster_queue:
            if child.name in remaining:
                candidates.append(remaining[child.name])
        elif (found := _tournament(child, remaining, shares)) is not None:
            candidates.append(found)
    if not candidates:
        return None
    best = candidates[0]
    before = _less(shares, cohort.name)
    for candidate in candidates[1:]:
        if before(candidate, best):
            best = candidate
    return best


def _less(shares: Shares, cohort: str) -> Callable[[Entry, Entry], bool]:
    def less(a: Entry, b: Entry) -> bool:
        if a.preemptor != b.preemptor:
            return a.preemptor  # as in the classical order (``Entry.order_key``)
        share_a, share_b = shares[(cohort, a.info.key)], shares[(cohort, b.info.key)]
        borrows_a = not share_a.borrowed.isdisjoint(a.assignment.usage)
        borrows_b = not share_b.borrowed.isdisjoint(b.assignment.usage)
        if borrows_a != borrows_b:
            return borrows_b
        order = compare(share_a, share_b)
        if order:
            return order < 0
        if a.info.priority != b.info.priority:
            return a.info.priority > b.info.priority
        return (a.info.queue_time, a.info.key) < (b.info.queue_time, b.info.key)

    return less
