"""Usage per node and FR, with the quota arithmetic of semantics §2.

A book is copy-on-write: ``fork()`` shares every per-node map and either side copies a map
the first time it writes to it, so a snapshot costs O(#nodes), not O(#workloads).
"""

from __future__ import annotations

from collections.abc import Mapping

from kq.api.quotas import FlavorResource
from kq.cache.quota_tree import QuotaNode


class UsageBook:
    def __init__(self, size: int) -> None:
        self._maps: list[dict[FlavorResource, int]] = [{} for _ in range(size)]
        self._owned: list[bool] = [True] * size

    def fork(self) -> UsageBook:
        child = UsageBook(0)  # not __new__: compiled (make compile), it calls __init__
        child._maps = list(self._maps)
        child._owned = [False] * len(self._maps)
        self._owned = [False] * len(self._maps)
        return child

    def of(self, node: QuotaNode) -> Mapping[FlavorResource, int]:
        return self._maps[node.index]

    def get(self, node: QuotaNode, fr: FlavorResource) -> int:
        return self._maps[node.index].get(fr, 0)

    def add(self, node: QuotaNode, usage: Mapping[FlavorResource, int], sign: int = 1) -> None:
        """Add (or with ``sign=-1`` remove) usage; what exceeds local quota bubbles up."""
        maps, owned = self._maps, self._owned
        for fr, amount in usage.items():
            current: QuotaNode | None = node
            delta = amount * sign
            while current is not None and delta:
                i = current.index
                if not owned[i]:
                    maps[i] = dict(maps[i])
                    owned[i] = True
                values = maps[i]
                before = values.get(fr, 0)
                after = before + delta
                values[fr] = after
                local = current.local.get(fr, 0)
                # What the node borrows, before and after; conditionals, not max(): hot path.
                delta = (after - local if after > local else 0) - (
                    before - local if before > local else 0
                )
                current = current.parent

    def available(self, node: QuotaNode, fr: FlavorResource) -> int:
        """What ``node`` can still take of ``fr``, borrowing included; may be negative."""
        usage = self._maps[node.index].get(fr, 0)
        if node.parent is None:
            return node.subtree.get(fr, 0) - usage
        local = node.local.get(fr, 0)
        from_parent = self.available(node.parent, fr)
        quota = node.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            stored = node.subtree.get(fr, 0) - local
            cap = stored - (usage - local if usage > local else 0) + quota.borrowing_limit
            if cap < from_parent:
                from_parent = cap
        elif quota is None and node.is_cluster_queue:
            from_parent = 0  # a ClusterQueue can't borrow a flavor/resource it doesn't list
        return (local - usage if local > usage else 0) + from_parent

    def borrowing_height(self, node: QuotaNode, fr: FlavorResource, value: int) -> tuple[int, bool]:
        """Height of the lowest subtree that fits ``value`` more, and whether it is below root."""
        usage = self._maps[node.index].get(fr, 0)
        quota = node.quotas.get(fr)
        nominal = quota.nominal if quota is not None else 0
        if node.parent is None or nominal >= usage + value:
            return 0, node.parent is not None
        remaining = value - max(0, node.local.get(fr, 0) - usage)
        current = node.parent
        while True:
            current_usage = self._maps[current.index].get(fr, 0)
            if current.subtree.get(fr, 0) >= current_usage + remaining:
                return current.height, current.parent is not None
            if current.parent is None:
                return current.height, False
            remaining -= max(0, current.local.get(fr, 0) - current_usage)
            current = current.parent


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """The most ``node`` could ever use of ``fr`` with no usage anywhere."""
    if node.parent is None:
        return node.subtree.get(fr, 0)
    quota = node.quotas.get(fr)
    if quota is None and node.is_cluster_queue:
        return 0
    total = node.local.get(fr, 0) + potential_available(node.parent, fr)
    if quota is not None and quota.borrowing_limit is not None:
        total = min(total, node.subtree.get(fr, 0) + quota.borrowing_limit)
    return total
