"""Nodes and the pods kq placed on them: the physical side of topology-aware admission.

Only workloads whose admission carries a ``topologyAssignment`` place pods here; the rest of
the cache never looks at nodes, so quota-only workloads pay nothing for topology.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kq.api.node import Node
from kq.api.topology import Topology, TopologyAssignment
from kq.workload.info import WorkloadInfo

Usage = Mapping[str, int]


def usage_by_node(
    assignments: Iterable[tuple[str, TopologyAssignment]],
    requests: Mapping[str, Mapping[str, int]],
) -> dict[str, dict[str, int]]:
    """Requests per node of pod sets' topology assignments (pod set name, assignment)."""
    out: dict[str, dict[str, int]] = {}
    for name, assignment in assignments:
        per_pod = requests.get(name, {})
        for node, count in assignment.nodes():
            used = out.setdefault(node, {})
            for resource, amount in per_pod.items():
                used[resource] = used.get(resource, 0) + amount * count
    return out


def placements_of(info: WorkloadInfo) -> dict[str, dict[str, int]]:
    """Requests per node of a workload's topology assignments (empty when it has none)."""
    admission = info.obj.admission
    if admission is None:
        return {}
    assigned = [(p.name, p.topology) for p in admission.pod_set_assignments if p.topology]
    if not assigned:
        return {}
    return usage_by_node(assigned, {ps.name: ps.requests for ps in info.obj.pod_sets})


def is_exclusive(info: WorkloadInfo) -> bool:
    return any(ps.topology is not None and ps.topology.exclusive for ps in info.obj.pod_sets)


class Placements:
    """Per node, the usage of each workload placed there; kept by the cache."""

    def __init__(self) -> None:
        self.by_node: dict[str, dict[str, Usage]] = {}
        self.exclusive: set[str] = set()
        """Workloads whose domains no one else may share."""
        self._nodes_of: dict[str, tuple[str, ...]] = {}

    def add(self, key: str, placed: Mapping[str, Usage], exclusive: bool = False) -> None:
        self.remove(key)
        if not placed:
            return
        for node, usage in placed.items():
            self.by_node.setdefault(node, {})[key] = usage
        self._nodes_of[key] = tuple(placed)
        if exclusive:
            self.exclusive.add(key)

    def remove(self, key: str) -> None:
        self.exclusive.discard(key)
        for node in self._nodes_of.pop(key, ()):
            holders = self.by_node.get(node)
            if holders is not None:
                holders.pop(key, None)
                if not holders:
                    del self.by_node[node]

    def holds(self, key: str) -> bool:
        return key in self._nodes_of


class TopologyView:
    """A cycle's view of nodes and placements; what the cycle places stays in the view."""

    def __init__(
        self,
        nodes: Mapping[str, Node],
        topologies: Mapping[str, Topology],
        placements: Mapping[str, Mapping[str, Usage]],
        exclusive: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        self.nodes = nodes
        self.topologies = topologies
        self._base = placements
        self._overlay: dict[str, dict[str, Usage]] = {}
        self._exclusive = exclusive
        self._exclusive_added: set[str] = set()

    def exclusive(self, key: str) -> bool:
        """Whether ``key``'s domains are its alone."""
        return key in self._exclusive_added or key in self._exclusive

    def holders(self, node: str) -> Mapping[str, Usage]:
        """Workload key → its usage on ``node``."""
        overlay = self._overlay.get(node)
        return overlay if overlay is not None else self._base.get(node, {})

    def used(self, node: str, ignore: Iterable[str] = ()) -> dict[str, int]:
        skip = set(ignore)
        total: dict[str, int] = {}
        for key, usage in self.holders(node).items():
            if key in skip:
                continue
            for resource, amount in usage.items():
                total[resource] = total.get(resource, 0) + amount
        return total

    def place(self, key: str, placed: Mapping[str, Usage], exclusive: bool = False) -> None:
        if exclusive:
            self._exclusive_added.add(key)
        for node, usage in placed.items():
            holders = self._overlay.setdefault(node, dict(self._base.get(node, {})))
            holders[key] = usage

    def unplace(self, key: str) -> None:
        for node in set(self._base) | set(self._overlay):
            if key in self.holders(node):
                holders = self._overlay.setdefault(node, dict(self._base.get(node, {})))
                holders.pop(key, None)
