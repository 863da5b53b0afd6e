"""The single owner of quota usage: specs in, usage per ClusterQueue and cohort, snapshots out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from kq.api.admissioncheck import AdmissionCheck
from kq.api.clusterqueue import ClusterQueue
from kq.api.cohort import Cohort
from kq.api.node import Node
from kq.api.quotas import FlavorResource
from kq.api.resourceflavor import ResourceFlavor
from kq.api.topology import Topology
from kq.cache.fair_share import DRS, dominant_resource_share
from kq.cache.inactive import inactive_reason
from kq.cache.quota_tree import QuotaTree
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.cache.topology import Placements, TopologyView, is_exclusive, placements_of
from kq.cache.usage import UsageBook
from kq.workload.info import WorkloadInfo


@dataclass(init=False, slots=True)
class CachedWorkload:
    info: Final[WorkloadInfo]
    admitted: Final[bool]
    """``Admitted=True`` (all checks ready), not just quota reserved."""
    assumed: Final[bool]

    def __init__(self, info: WorkloadInfo, admitted: bool, assumed: bool) -> None:
        self.info = info
        self.admitted = admitted
        self.assumed = assumed


class Cache:
    """Specs and quota-holding workloads; every usage number comes from here."""

    def __init__(self) -> None:
        self.flavors: dict[str, ResourceFlavor] = {}
        self.checks: dict[str, AdmissionCheck] = {}
        self.cluster_queues: dict[str, ClusterQueue] = {}
        self.cohorts: dict[str, Cohort] = {}
        self._workloads: dict[str, CachedWorkload] = {}
        self._by_cq: dict[str, dict[str, WorkloadInfo]] = {}
        self._shared_cqs: set[str] = set()
        # The active ClusterQueues' views for the tree they were made for; a view whose
        # workload map was copied since (``_stale_views``) is remade at the next snapshot.
        self._views: dict[str, ClusterQueueSnapshot] = {}
        self._views_tree: QuotaTree | None = None
        self._stale_views: set[str] = set()
        self._tree: QuotaTree | None = None
        self._usage = UsageBook(0)
        self._inactive: dict[str, tuple[str, str]] = {}
        self._active: frozenset[str] = frozenset()
        self.nodes: dict[str, Node] = {}
        self.topologies: dict[str, Topology] = {}
        self.placements = Placements()
        """Per node, what kq placed there: admissions with a topology assignment."""

    # -- specs ---------------------------------------------------------------------------

    def set_flavor(self, flavor: ResourceFlavor) -> None:
        self.flavors[flavor.name] = flavor
        self._tree = None

    def delete_flavor(self, name: str) -> None:
        self.flavors.pop(name, None)
        self._tree = None

    def set_admission_check(self, check: AdmissionCheck) -> None:
        self.checks[check.name] = check
        self._tree = None

    def delete_admission_check(self, name: str) -> None:
        self.checks.pop(name, None)
        self._tree = None

    def set_cluster_queue(self, cq: ClusterQueue) -> None:
        self.cluster_queues[cq.name] = cq
        self._tree = None

    def delete_cluster_queue(self, name: str) -> None:
        self.cluster_queues.pop(name, None)
        self._tree = None

    def set_cohort(self, cohort: Cohort) -> None:
        self.cohorts[cohort.name] = cohort
        self._tree = None

    def delete_cohort(self, name: str) -> None:
        self.cohorts.pop(name, None)
        self._tree = None

    def set_node(self, name: str, node: Node | None) -> None:
        if node is None:
            self.nodes.pop(name, None)
        else:
            self.nodes[name] = node

    def set_topology(self, name: str, topology: Topology | None) -> None:
        if topology is None:
            self.topologies.pop(name, None)
        else:
            self.topologies[name] = topology

    # -- workloads holding quota ---------------------------------------------------------

    def add_workload(self, info: WorkloadInfo, admitted: bool = False) -> None:
        """Record a workload that holds a quota reservation (replacing an older version)."""
        self.delete_workload(info.key)
        self._insert(CachedWorkload(info, admitted, assumed=False))

    def assume_workload(self, info: WorkloadInfo) -> None:
        """Take the quota now, before the status write is confirmed."""
        self.delete_workload(info.key)
        self._insert(CachedWorkload(info, admitted=False, assumed=True))

    def forget_workload(self, key: str) -> None:
        """Undo ``assume_workload`` after a failed write; a confirmed workload stays."""
        cached = self._workloads.get(key)
        if cached is not None and cached.assumed:
            self.delete_workload(key)

    def mark_admitted(self, key: str, admitted: bool = True) -> None:
        cached = self._workloads.get(key)
        if cached is not None:
            self._workloads[key] = CachedWorkload(cached.info, admitted, assumed=False)

    def delete_workload(self, key: str) -> WorkloadInfo | None:
        """Release the workload's quota (finished, deleted, or reservation cleared)."""
        cached = self._workloads.pop(key, None)
        if cached is None:
            return None
        info = cached.info
        self._writable_cq(info.cluster_queue).pop(key, None)
        self.placements.remove(key)
        tree = self._tree
        if tree is not None and info.cluster_queue in tree.cluster_queues:
            self._usage.add(tree.cluster_queues[info.cluster_queue], info.usage, -1)
        return info

    def holds_quota(self, key: str) -> bool:
        return key in self._workloads

    def workload(self, key: str) -> CachedWorkload | None:
        return self._workloads.get(key)

    def workloads_in(self, cq: str) -> Mapping[str, WorkloadInfo]:
        return self._by_cq.get(cq, {})

    def _insert(self, cached: CachedWorkload) -> None:
        info = cached.info
        self._workloads[info.key] = cached
        self._writable_cq(info.cluster_queue)[info.key] = info
        placed = placements_of(info)
        if placed:
            self.placements.add(info.key, placed, is_exclusive(info))
        tree = self._tree
        if tree is not None and info.cluster_queue in tree.cluster_queues:
            self._usage.add(tree.cluster_queues[info.cluster_queue], info.usage)

    def _writable_cq(self, cq: str) -> dict[str, WorkloadInfo]:
        if cq in self._shared_cqs:
            self._by_cq[cq] = dict(self._by_cq[cq])
            self._shared_cqs.discard(cq)
            self._stale_views.add(cq)
        return self._by_cq.setdefault(cq, {})

    # -- derived -------------------------------------------------------------------------

    def tree(self) -> QuotaTree:
        """The cohort tree; rebuilt, and usage re-applied, only after a spec change."""
        if self._tree is None:
            tree = QuotaTree(self.cluster_queues, self.cohorts)
            usage = UsageBook(len(tree.nodes))
            for cached in self._workloads.values():
                node = tree.cluster_queues.get(cached.info.cluster_queue)
                if node is not None:
                    usage.add(node, cached.info.usage)
            self._inactive = {
                name: why
                for name, cq in self.cluster_queues.items()
                if (why := inactive_reason(cq, self.flavors, self.checks, tree.in_cycle))
            }
            self._active = frozenset(n for n in tree.cluster_queues if n not in self._inactive)
            self._tree, self._usage = tree, usage
        return self._tree

    def usage_of(self, cq: str) -> Mapping[FlavorResource, int]:
        node = self.tree().cluster_queues.get(cq)
        return {} if node is None else self._usage.of(node)

    def fits_unborrowed(self, cq: str, requests: Mapping[str, int]) -> bool:
        """Whether each resource of ``requests`` fits, in some flavor, in what is left of
        ``cq``'s own nominal quota now: no borrowing and nothing to preempt. A resource the
        queue does not cover fails it, except ``pods``, which only some queues count."""
        node = self.tree().cluster_queues.get(cq)
        if node is None or cq not in self._active:
            return False
        usage = self._usage
        for resource, amount in requests.items():
            if amount <= 0:
                continue  # asked for nothing: flavor assignment ignores it too
            covered = fits = False
            for fr, quota in node.quotas.items():
                if fr[1] != resource:
                    continue
                covered = True
                if (
                    quota.nominal - usage.get(node, fr) >= amount
                    and usage.available(node, fr) >= amount
                ):
                    fits = True
                    break
            if not fits and (covered or resource != "pods"):
                return False
        return True

    def fair_share(self, cq: str) -> DRS | None:
        """A ClusterQueue's dominant resource share now; ``None`` if it is not in the tree."""
        node = self.tree().cluster_queues.get(cq)
        return None if node is None else dominant_resource_share(self._usage, node)

    def cohort_share(self, cohort: str) -> DRS | None:
        """A Cohort's dominant resource share now (0 for a root); ``None`` if unknown."""
        node = self.tree().cohorts.get(cohort)
        return None if node is None else dominant_resource_share(self._usage, node)

    def inactive_reason(self, cq: str) -> tuple[str, str] | None:
        """The ``Active=False`` reason and message of a ClusterQueue; ``None`` when active."""
        self.tree()
        return self._inactive.get(cq)

    def active(self) -> frozenset[str]:
        """The ClusterQueues a snapshot holds: in the tree and active. Known without one, so
        a cycle with no head to decide costs no snapshot."""
        self.tree()
        return self._active

    def cohort_tree_of(self, cq: str) -> Iterable[str]:
        """Names of the ClusterQueues sharing ``cq``'s root cohort (``cq`` alone if none)."""
        tree = self.tree()
        node = tree.cluster_queues.get(cq)
        return (cq,) if node is None else tree.queues_under(node.root())

    def queues_under_cohort(self, cohort: str) -> Iterable[str]:
        """Names of the ClusterQueues in the whole tree holding ``cohort``."""
        tree = self.tree()
        node = tree.cohorts.get(cohort)
        return () if node is None else tree.queues_under(node.root())

    def snapshot(self) -> Snapshot:
        """O(#ClusterQueues) in C: usage and workload maps are shared copy-on-write, and only
        the views of queues whose workloads changed since the last snapshot are remade."""
        tree = self.tree()
        views = self._views
        remake: Iterable[str] = self._stale_views
        if self._views_tree is not tree:
            views.clear()
            self._views_tree, remake = tree, tree.cluster_queues  # all, in the tree's order
        for name in remake:
            node = tree.cluster_queues.get(name)
            if node is not None and name in self._active:
                workloads = self._by_cq.setdefault(name, {})
                views[name] = ClusterQueueSnapshot(self.cluster_queues[name], node, workloads)
        self._stale_views.clear()
        self._shared_cqs.update(views)
        inactive = {name: message for name, (_, message) in self._inactive.items()}
        placements = self.placements
        topology = TopologyView(
            self.nodes, self.topologies, placements.by_node, placements.exclusive
        )
        return Snapshot(tree, self._usage.fork(), dict(views), inactive, self.flavors, topology)
