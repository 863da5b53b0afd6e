"""The cohort tree with each node's quota, subtree quota and local (not lent) quota.

A tree is immutable once built; it is rebuilt only when a ClusterQueue, Cohort or flavor
spec changes. Usage lives apart, in a ``UsageBook``, so a snapshot shares the tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kq.api.clusterqueue import ClusterQueue
from kq.api.cohort import Cohort
from kq.api.interning import flavor_resource
from kq.api.quotas import FlavorResource, ResourceQuota


@dataclass(eq=False, slots=True)
class QuotaNode:
    """A ClusterQueue or Cohort: its limits and the derived subtree/local quotas per FR."""

    name: str
    index: int
    is_cluster_queue: bool
    quotas: Mapping[FlavorResource, ResourceQuota]
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    subtree: dict[FlavorResource, int] = field(default_factory=dict)
    local: dict[FlavorResource, int] = field(default_factory=dict)
    height: int = 0
    weight: float = 1.0
    """Its ``fairSharing.weight``."""

    def path(self) -> str:
        """``/root/.../name`` as in Kueue's preemption messages."""
        parts = []
        node: QuotaNode | None = self
        while node is not None:
            parts.append(node.name)
            node = node.parent
        return "/" + "/".join(reversed(parts))

    def root(self) -> QuotaNode:
        node = self
        while node.parent is not None:
            node = node.parent
        return node


class QuotaTree:
    """All nodes, indexed by position; ClusterQueues in cohort cycles are left out."""

    def __init__(
        self, cluster_queues: Mapping[str, ClusterQueue], cohorts: Mapping[str, Cohort]
    ) -> None:
        self.nodes: list[QuotaNode] = []
        self.cohorts: dict[str, QuotaNode] = {}
        self.cluster_queues: dict[str, QuotaNode] = {}
        self.in_cycle: set[str] = set()
        self.potential: dict[int, dict[FlavorResource, int]] = {}
        """``potential_available`` per node index and FR: quota alone decides it, so the
        snapshots sharing this tree share the answers."""
        self._under: dict[int, tuple[str, ...]] = {}
        for name in cohorts:
            self._cohort(name, cohorts)
        for cq in cluster_queues.values():
            node = self._new(cq.name, True, cq.quotas)
            node.weight = cq.fair_weight
            if cq.cohort is not None:
                parent = self._cohort(cq.cohort, cohorts)
                if parent is None:
                    self.in_cycle.add(cq.name)
                    continue
                node.parent = parent
                parent.children.append(node)
            self.cluster_queues[cq.name] = node
        for node in self.nodes:
            if node.parent is None and (node.is_cluster_queue or node.name in self.cohorts):
                _compute(node)

    def queues_under(self, node: QuotaNode) -> tuple[str, ...]:
        """Names of the ClusterQueues in ``node``'s subtree (computed once per tree)."""
        found = self._under.get(node.index)
        if found is None:
            stack, names = [node], []
            while stack:
                current = stack.pop()
                if current.is_cluster_queue:
                    names.append(current.name)
                stack.extend(current.children)
            found = self._under[node.index] = tuple(names)
        return found

    def _new(
        self, name: str, is_cq: bool, quotas: Mapping[FlavorResource, ResourceQuota]
    ) -> QuotaNode:
        shared = {flavor_resource(*fr): quota for fr, quota in quotas.items()}
        node = QuotaNode(name, len(self.nodes), is_cq, shared)
        self.nodes.append(node)
        return node

    def _cohort(
        self, name: str, specs: Mapping[str, Cohort], seen: tuple[str, ...] = ()
    ) -> QuotaNode | None:
        """The cohort node (implicit if no object), or ``None`` if its ancestry has a cycle."""
        if name in self.cohorts:
            return self.cohorts[name]
        if name in seen:
            return None
        spec = specs.get(name)
        parent = None
        if spec is not None and spec.parent is not None:
            parent = self._cohort(spec.parent, specs, (*seen, name))
            if parent is None:
                return None
        if name in self.cohorts:  # created while resolving a sibling branch
            return self.cohorts[name]
        node = self._new(name, False, spec.quotas if spec is not None else {})
        node.weight = spec.fair_weight if spec is not None else 1.0
        node.parent = parent
        if parent is not None:
            parent.children.append(node)
        self.cohorts[name] = node
        return node


def _compute(node: QuotaNode) -> None:
    """Fill subtree and local quotas bottom-up (semantics §2)."""
    subtree = {fr: q.nominal for fr, q in node.quotas.items()}
    height = 0
    for child in node.children:
        _compute(child)
        height = max(height, child.height + 1)
        for fr, amount in child.subtree.items():
            lent = amount - child.local.get(fr, 0)
            subtree[fr] = subtree.get(fr, 0) + lent
    node.height = height
    node.subtree = subtree
    local = {}
    for fr, amount in subtree.items():
        quota = node.quotas.get(fr)
        if node.parent is None:
            local[fr] = amount
        elif quota is not None and quota.lending_limit is not None:
            local[fr] = max(0, amount - quota.lending_limit)
    node.local = local
