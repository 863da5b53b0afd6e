"""The immutable view a scheduling cycle works on, with a private copy-on-write usage book."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kq.api.clusterqueue import ClusterQueue
from kq.api.quotas import FlavorResource
from kq.api.resourceflavor import ResourceFlavor
from kq.cache.quota_tree import QuotaNode, QuotaTree
from kq.cache.topology import TopologyView
from kq.cache.usage import UsageBook, potential_available
from kq.workload.info import WorkloadInfo


@dataclass(init=False, slots=True)
class ClusterQueueSnapshot:
    spec: Final[ClusterQueue]
    node: Final[QuotaNode]
    workloads: Final[Mapping[str, WorkloadInfo]]
    """Workloads holding quota in this ClusterQueue (shared with the cache, never mutated)."""

    def __init__(
        self, spec: ClusterQueue, node: QuotaNode, workloads: Mapping[str, WorkloadInfo]
    ) -> None:
        self.spec = spec
        self.node = node
        self.workloads = workloads

    @property
    def name(self) -> str:
        return self.spec.name


class Snapshot:
    """Quota tree, flavors and per-CQ admitted workloads; usage changes stay in the snapshot."""

    def __init__(
        self,
        tree: QuotaTree,
        usage: UsageBook,
        cluster_queues: Mapping[str, ClusterQueueSnapshot],
        inactive: Mapping[str, str],
        flavors: Mapping[str, ResourceFlavor],
        topology: TopologyView | None = None,
    ) -> None:
        self.tree = tree
        self.usage = usage
        self.cluster_queues = cluster_queues
        self.inactive = inactive
        """Inactive ClusterQueue name → the message saying why."""
        self.flavors = flavors
        self.topology = topology or TopologyView({}, {}, {})
        """Nodes and kq's placements on them, for pod sets on topology flavors."""
        self.fair_sharing: tuple[str, ...] | None = None
        """Fair sharing's preemption strategies when it is on; ``None`` when it is off."""

    def available(self, cq: ClusterQueueSnapshot, fr: FlavorResource) -> int:
        return max(0, self.usage.available(cq.node, fr))

    def potential_available(self, cq: ClusterQueueSnapshot, fr: FlavorResource) -> int:
        known = self.tree.potential.get(cq.node.index)
        if known is None:
            known = self.tree.potential[cq.node.index] = {}
        found = known.get(fr)
        if found is None:
            found = known[fr] = potential_available(cq.node, fr)
        return found

    def used(self, cq: ClusterQueueSnapshot, fr: FlavorResource) -> int:
        return self.usage.get(cq.node, fr)

    def nominal(self, cq: ClusterQueueSnapshot, fr: FlavorResource) -> int:
        quota = cq.node.quotas.get(fr)  # the spec's, keyed by shared pairs
        return 0 if quota is None else quota.nominal

    def borrowing_limit(self, cq: ClusterQueueSnapshot, fr: FlavorResource) -> int | None:
        quota = cq.node.quotas.get(fr)
        return None if quota is None else quota.borrowing_limit

    def fits(
        self,
        cq: ClusterQueueSnapshot,
        usage: Mapping[FlavorResource, int],
        allow_borrowing: bool = True,
    ) -> bool:
        for fr, amount in usage.items():
            if amount > self.usage.available(cq.node, fr):
                return False
            if not allow_borrowing and self.used(cq, fr) + amount > self.nominal(cq, fr):
                return False
        return True

    def add_usage(self, cq: ClusterQueueSnapshot, usage: Mapping[FlavorResource, int]) -> None:
        self.usage.add(cq.node, usage)

    def remove_usage(self, cq: ClusterQueueSnapshot, usage: Mapping[FlavorResource, int]) -> None:
        self.usage.add(cq.node, usage, -1)

    def remove_workload(self, info: WorkloadInfo) -> None:
        """Simulate a victim leaving: its quota is freed in this snapshot only."""
        self.remove_usage(self.cluster_queues[info.cluster_queue], info.usage)

    def restore_workload(self, info: WorkloadInfo) -> None:
        self.add_usage(self.cluster_queues[info.cluster_queue], info.usage)
