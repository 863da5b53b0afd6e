"""Dominant resource share (DRS): how much a ClusterQueue or Cohort borrows, for fair sharing.

For a node with a parent: per resource name, what its usage (plus a workload's, if given)
exceeds its subtree quota by, summed over flavors, per 1000 of what its parent's subtree could
lend of that resource; the largest such ratio, divided by the node's weight. A node within its
quota has share 0; a borrowing node of weight 0 has an infinite share. Kueue's semantics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from kq.api.quotas import FlavorResource
from kq.cache.quota_tree import QuotaNode
from kq.cache.usage import UsageBook, potential_available

MAX_INT64 = 2**63 - 1


@dataclass(frozen=True, slots=True)
class DRS:
    weight: float = 1.0
    ratio: float = 0.0
    """Borrowed per 1000 of lendable, before the weight."""
    resource: str = ""
    borrowed: frozenset[FlavorResource] = frozenset()

    @property
    def borrowing(self) -> bool:
        return bool(self.borrowed)

    def share(self) -> float:
        """The weighted share; infinite for a borrowing node of weight 0."""
        if self.ratio == 0:
            return 0.0
        return math.inf if self.weight == 0 else self.ratio / self.weight

    def rounded(self) -> int:
        """``status.fairSharing.weightedShare``: the share rounded up, or the int64 maximum."""
        share = self.share()
        return MAX_INT64 if math.isinf(share) else math.ceil(share)

    def _zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0


NEGATIVE = DRS(ratio=-1.0)
"""Below every real share: where a search for the highest starts."""


def compare(a: DRS, b: DRS) -> int:
    """-1, 0 or 1: the lower share is admitted first and preempted last."""
    if a._zero_weight_borrows() and b._zero_weight_borrows():
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a._zero_weight_borrows():
        return 1
    if b._zero_weight_borrows():
        return -1
    x, y = a.share(), b.share()
    return (x > y) - (x < y)


def dominant_resource_share(
    book: UsageBook, node: QuotaNode, extra: Mapping[FlavorResource, int] | None = None
) -> DRS:
    """The node's DRS, with ``extra`` usage added to it (a workload about to be admitted)."""
    if node.parent is None:
        return DRS(node.weight)
    extra = extra or {}
    usage = book.of(node)
    borrowing: dict[str, int] = {}
    borrowed: list[FlavorResource] = []
    for fr, quota in node.subtree.items():
        over = extra.get(fr, 0) + usage.get(fr, 0) - quota
        if over > 0:
            borrowing[fr[1]] = borrowing.get(fr[1], 0) + over
            borrowed.append(fr)
    if not borrowing:
        return DRS(node.weight)
    lendable = _lendable(node.parent)
    ratio, dominant = 0.0, ""
    for resource in sorted(borrowing):
        can_lend = lendable.get(resource, 0)
        if can_lend > 0:
            value = borrowing[resource] * 1000.0 / can_lend
            if value > ratio:
                ratio, dominant = value, resource
    return DRS(node.weight, ratio, dominant, frozenset(borrowed))


def _lendable(node: QuotaNode) -> dict[str, int]:
    """Per resource name, what ``node`` could ever use, over every flavor of its tree."""
    out: dict[str, int] = {}
    for fr in node.root().subtree:
        out[fr[1]] = out.get(fr[1], 0) + potential_available(node, fr)
    return out
