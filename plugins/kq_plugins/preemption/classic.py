"""Kueue's classic preemption: within the ClusterQueue, reclaim and borrow within the cohort.

Candidates are removed greedily in upstream order until the preemptor fits, then added back
in reverse while it still fits, which leaves a minimal set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from operator import itemgetter
from typing import ClassVar, Final

from kq.plugin import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    ClusterQueueSnapshot,
    FlavorResource,
    QuotaNode,
    Snapshot,
    Target,
    WorkloadInfo,
)
from kq_plugins.preemption import fair
from kq_plugins.preemption.common import candidate_order, satisfies, uses


class Variant(Enum):
    """How a candidate may be preempted, which decides its reason and when it is valid."""

    WITHIN_CLUSTER_QUEUE = "WithinClusterQueue"
    HIERARCHICAL = "HierarchicalReclaim"
    """The preemptor's side of the tree has a claim on the quota the candidate borrows."""
    WITHOUT_BORROWING = "ReclaimWithoutBorrowing"
    """Only if the preemptor ends within its nominal quota."""
    WHILE_BORROWING = "ReclaimWhileBorrowing"
    """Even if the preemptor keeps borrowing (borrowWithinCohort)."""


@dataclass(init=False, slots=True)
class _Candidate:
    workload: Final[WorkloadInfo]
    reason: Final[str]
    variant: Final[Variant]
    lca: Final[QuotaNode | None]
    """Where the preemptor's and the candidate's paths meet; ``None`` for the same queue."""

    def __init__(
        self, workload: WorkloadInfo, reason: str, variant: Variant, lca: QuotaNode | None
    ) -> None:
        self.workload = workload
        self.reason = reason
        self.variant = variant
        self.lca = lca

    def order_key(self) -> tuple[bool, bool, float, int, float, str]:
        return candidate_order(self.workload, self.variant is Variant.WITHIN_CLUSTER_QUEUE)


class ClassicPreemption:
    """Kueue's preemption: classic, or fair sharing's when the configuration turns it on."""

    NAME: ClassVar[str] = "ClassicPreemption"

    def targets(
        self,
        snapshot: Snapshot,
        cq: ClusterQueueSnapshot,
        preemptor: WorkloadInfo,
        usage: Mapping[FlavorResource, int],
    ) -> Sequence[Target]:
        needed = {fr for fr, amount in usage.items() if amount > snapshot.available(cq, fr)}
        if not needed:
            return ()
        if snapshot.fair_sharing is not None:
            fair_candidates = fair.candidates(snapshot, cq, preemptor, needed)
            return fair.fair_targets(
                snapshot, cq, usage, fair_candidates, snapshot.fair_sharing, frozenset(needed)
            )
        policy = cq.spec.preemption
        borrow_forbidden = policy.borrow_within_cohort == "Never"
        at_nominal = any(snapshot.used(cq, fr) >= snapshot.nominal(cq, fr) for fr in needed)
        # Then the only run allows borrowing, where a candidate that may only be reclaimed
        # without borrowing is never valid: not collecting them spares a walk over every
        # borrowing queue's workloads on each try of a queue at its nominal quota.
        borrowing_only = borrow_forbidden and at_nominal
        candidates = self._candidates(snapshot, cq, preemptor, usage, needed, borrowing_only)
        if not candidates:
            return ()
        cross = [c for c in candidates if c.variant is not Variant.WITHIN_CLUSTER_QUEUE]
        hierarchical = any(c.variant is Variant.HIERARCHICAL for c in cross)
        if not cross or borrowing_only:
            runs: tuple[bool, ...] = (True,)
        elif borrow_forbidden and not hierarchical:
            runs = (False, True)
        else:
            runs = (True, False)
        for allow_borrowing in runs:
            found = self._minimal(snapshot, cq, usage, needed, candidates, allow_borrowing)
            if found:
                return [Target(c.workload, c.reason) for c in found]
        return ()

    def _candidates(
        self,
        snapshot: Snapshot,
        cq: ClusterQueueSnapshot,
        preemptor: WorkloadInfo,
        usage: Mapping[FlavorResource, int],
        needed: set[FlavorResource],
        borrowing_only: bool,
    ) -> list[_Candidate]:
        """Upstream order: evicted before not, then hierarchy, priority, same-queue lists."""
        collector = _Collector(snapshot, cq, preemptor, needed, borrowing_only)
        same = collector.same_queue()
        hierarchy, priority = collector.cohort(usage)
        # Each key computed once; its first item says whether the candidate is not evicted.
        # Most asks find nobody: nothing is sorted then.
        lists = [
            sorted([(c.order_key(), c) for c in found], key=itemgetter(0))
            for found in (hierarchy, priority, same)
            if found
        ]
        evicted = [c for found in lists for key, c in found if not key[0]]
        return evicted + [c for found in lists for key, c in found if key[0]]

    def _minimal(
        self,
        snapshot: Snapshot,
        cq: ClusterQueueSnapshot,
        usage: Mapping[FlavorResource, int],
        needed: set[FlavorResource],
        candidates: list[_Candidate],
        allow_borrowing: bool,
    ) -> list[_Candidate]:
        removed: list[_Candidate] = []
        fits = False
        for candidate in candidates:
            if candidate.variant is not Variant.WITHIN_CLUSTER_QUEUE and not _valid(
                snapshot, candidate, needed, allow_borrowing
            ):
                continue
            snapshot.remove_workload(candidate.workload)
            removed.append(candidate)
            if snapshot.fits(cq, usage, allow_borrowing):
                fits = True
                break
        if fits:
            for i in range(len(removed) - 2, -1, -1):
                snapshot.restore_workload(removed[i].workload)
                if snapshot.fits(cq, usage, allow_borrowing):
                    del removed[i]
                else:
                    snapshot.remove_workload(removed[i].workload)
        for candidate in removed:
            snapshot.restore_workload(candidate.workload)
        return removed if fits else []


def _over_quota(snapshot: Snapshot, node: QuotaNode, needed: set[FlavorResource]) -> bool:
    """Some needed FR is used beyond the node's subtree quota (its nominal, for a queue)."""
    used, subtree = snapshot.usage.of(node), node.subtree  # asked of every sibling queue
    return any(used.get(fr, 0) > subtree.get(fr, 0) for fr in needed)


def _valid(
    snapshot: Snapshot, candidate: _Candidate, needed: set[FlavorResource], allow_borrowing: bool
) -> bool:
    """Re-checked lazily: earlier removals may have brought the owner back within quota."""
    if allow_borrowing and candidate.variant is Variant.WITHOUT_BORROWING:
        return False
    node: QuotaNode | None = snapshot.cluster_queues[candidate.workload.cluster_queue].node
    while node is not None and node is not candidate.lca:
        if not _over_quota(snapshot, node, needed):
            return False
        node = node.parent
    return True


class _Collector:
    """Finds and classifies candidates for one preemptor (semantics §5.3)."""

    # one per ask: no __dict__
    __slots__ = ("borrowing_only", "cq", "needed", "policy", "preemptor", "snapshot")

    def __init__(
        self,
        snapshot: Snapshot,
        cq: ClusterQueueSnapshot,
        preemptor: WorkloadInfo,
        needed: set[FlavorResource],
        borrowing_only: bool,
    ) -> None:
        self.snapshot, self.cq, self.preemptor, self.needed = snapshot, cq, preemptor, needed
        self.policy = cq.spec.preemption
        self.borrowing_only = borrowing_only
        """Only a run that allows borrowing follows, and borrowing within the cohort is
        forbidden: candidates without a hierarchical advantage would all be invalid."""

    def same_queue(self) -> list[_Candidate]:
        policy = self.policy.within_cluster_queue
        if policy == "Never":
            return []
        return [
            _Candidate(info, IN_CLUSTER_QUEUE, Variant.WITHIN_CLUSTER_QUEUE, None)
            for info in self.cq.workloads.values()
            # Priority first: a head that can preempt nobody here is the usual asker.
            if satisfies(policy, self.preemptor, info) and uses(info, self.needed)
        ]

    def cohort(
        self, usage: Mapping[FlavorResource, int]
    ) -> tuple[list[_Candidate], list[_Candidate]]:
        """Walk up from the queue; below an ancestor that fits the rest, we have an advantage."""
        hierarchy: list[_Candidate] = []
        priority: list[_Candidate] = []
        node = self.cq.node
        if node.parent is None or self.policy.reclaim_within_cohort == "Never":
            return hierarchy, priority
        advantage, remaining = self._fit_in_quota(node, usage)
        previous: QuotaNode | None = None
        ancestor: QuotaNode | None = node.parent
        while ancestor is not None:
            if advantage or not self.borrowing_only:
                target = hierarchy if advantage else priority
                self._collect(ancestor, ancestor, previous, advantage, target)
            if ancestor.parent is None:
                break  # the root: no level above asks whether it fits
            fits, remaining = self._fit_in_quota(ancestor, remaining)
            advantage = advantage or fits
            previous, ancestor = ancestor, ancestor.parent
        return hierarchy, priority

    def _fit_in_quota(
        self, node: QuotaNode, requests: Mapping[FlavorResource, int]
    ) -> tuple[bool, dict[FlavorResource, int]]:
        usage = self.snapshot.usage
        fits = True
        remaining = {}
        for fr, amount in requests.items():
            used = usage.get(node, fr)
            if used + amount > node.subtree.get(fr, 0):
                fits = False
            remaining[fr] = max(0, amount - max(0, node.local.get(fr, 0) - used))
        return fits, remaining

    def _collect(
        self,
        current: QuotaNode,
        lca: QuotaNode,
        skip: QuotaNode | None,
        advantage: bool,
        out: list[_Candidate],
    ) -> None:
        for child in current.children:
            if child is skip or child is self.cq.node:
                continue
            if not _over_quota(self.snapshot, child, self.needed):
                continue
            if not child.is_cluster_queue:
                self._collect(child, lca, skip, advantage, out)
                continue
            queue = self.snapshot.cluster_queues.get(child.name)
            if queue is not None:
                out.extend(self._classified(queue, lca, advantage))

    def _classified(
        self, queue: ClusterQueueSnapshot, lca: QuotaNode, advantage: bool
    ) -> list[_Candidate]:
        policy, preemptor = self.policy, self.preemptor
        threshold = policy.max_priority_threshold
        found = []
        for info in queue.workloads.values():
            if not uses(info, self.needed):
                continue
            if not satisfies(policy.reclaim_within_cohort, preemptor, info):
                continue
            if advantage:
                found.append(_Candidate(info, IN_COHORT_RECLAMATION, Variant.HIERARCHICAL, lca))
                continue
            while_borrowing = (
                policy.borrow_within_cohort != "Never"
                and info.priority < preemptor.priority
                and (threshold is None or info.priority <= threshold)
            )
            if while_borrowing:
                found.append(
                    _Candidate(
                        info, IN_COHORT_RECLAIM_WHILE_BORROWING, Variant.WHILE_BORROWING, lca
                    )
                )
            else:
                found.append(
                    _Candidate(info, IN_COHORT_RECLAMATION, Variant.WITHOUT_BORROWING, lca)
                )
        return found
