"""Kueue's preemption under fair sharing: victims come from the ClusterQueues whose share is
highest, and only while the preemptor's share stays fair (KEP-1714, rules S2-a and S2-b).

With the preemptor's usage counted in, target queues are visited from the root down, always
into the child with the highest share that still borrows. A candidate of another queue is
taken if the strategy holds between the preemptor's and the target's almost-lowest-common
ancestors: ``LessThanOrEqualToFinalShare`` (the preemptor's share after admission is at most
the target's after the removal) or ``LessThanInitialShare`` (below the target's before it).
While the preemptor's queue stays within its nominal quota on the contested resources with the
preemptor counted in, it reclaims from other queues whatever their shares (Kueue's
FairSharingPreemptWithinNominal, on by default since v0.17), reason ``InCohortReclamation``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kq.plugin import (
    DRS,
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    NEGATIVE_DRS,
    ClusterQueueSnapshot,
    FlavorResource,
    QuotaNode,
    Snapshot,
    Target,
    WorkloadInfo,
    compare_drs,
    dominant_resource_share,
)
from kq_plugins.preemption.common import candidate_order, satisfies, uses

FINAL = "LessThanOrEqualToFinalShare"
INITIAL = "LessThanInitialShare"
Candidate = WorkloadInfo


@dataclass
class _Context:
    snapshot: Snapshot
    cq: ClusterQueueSnapshot
    usage: Mapping[FlavorResource, int]
    needed: frozenset[FlavorResource] = frozenset()
    """The flavor-resources the preemptor lacks."""
    path: set[int] = field(default_factory=set)
    """Indexes of the preemptor's ancestors."""

    def within_nominal(self) -> bool:
        """The preemptor's queue, the preemptor counted in, borrows none of ``needed``."""
        node = self.cq.node
        return all(
            self.snapshot.usage.get(node, fr) <= node.subtree.get(fr, 0) for fr in self.needed
        )

    def fits(self) -> bool:
        """Whether the preemptor fits now (its own usage, counted in for shares, taken out)."""
        self.snapshot.remove_usage(self.cq, self.usage)
        fits = self.snapshot.fits(self.cq, self.usage)
        self.snapshot.add_usage(self.cq, self.usage)
        return fits

    def share(self, node: QuotaNode) -> DRS:
        return dominant_resource_share(self.snapshot.usage, node)

    def almost_lcas(self, target: QuotaNode) -> tuple[QuotaNode, QuotaNode]:
        """The children of the lowest common ancestor on the preemptor's and target's paths."""
        target_side = target
        while target_side.parent is not None and target_side.parent.index not in self.path:
            target_side = target_side.parent
        lca = target_side.parent
        preemptor_side = self.cq.node
        while preemptor_side.parent is not lca and preemptor_side.parent is not None:
            preemptor_side = preemptor_side.parent
        return preemptor_side, target_side


def candidates(
    snapshot: Snapshot,
    cq: ClusterQueueSnapshot,
    preemptor: WorkloadInfo,
    needed: set[FlavorResource],
) -> list[Candidate]:
    """Within the queue by its policy, and from every queue of the tree borrowing a needed FR
    by ``reclaimWithinCohort``; in preemption order."""
    policy = cq.spec.preemption
    found = []
    if policy.within_cluster_queue != "Never":
        found += [
            (info, True)
            for info in cq.workloads.values()
            if uses(info, needed) and satisfies(policy.within_cluster_queue, preemptor, info)
        ]
    node = cq.node
    if node.parent is not None and policy.reclaim_within_cohort != "Never":
        for other in snapshot.cluster_queues.values():
            if other is cq or other.node.root() is not node.root():
                continue
            if not any(snapshot.used(other, fr) > snapshot.nominal(other, fr) for fr in needed):
                continue
            found += [
                (info, False)
                for info in other.workloads.values()
                if uses(info, needed) and satisfies(policy.reclaim_within_cohort, preemptor, info)
            ]
    return [info for info, same in sorted(found, key=lambda f: candidate_order(*f))]


def fair_targets(
    snapshot: Snapshot,
    cq: ClusterQueueSnapshot,
    usage: Mapping[FlavorResource, int],
    candidates: Sequence[Candidate],
    strategies: Sequence[str],
    needed: frozenset[FlavorResource] = frozenset(),
) -> list[Target]:
    """The victims, or none when the strategies allow no fit; ``needed``: the flavor-resources
    the preemptor lacks."""
    ctx = _Context(snapshot, cq, usage, needed)
    node = cq.node.parent
    while node is not None:
        ctx.path.add(node.index)
        node = node.parent
    snapshot.add_usage(cq, usage)
    try:
        fits, targets, retry = _first(ctx, candidates, strategies[0])
        if not fits and len(strategies) > 1:
            fits, targets = _second(ctx, retry, targets)
        if fits:
            found = _fewest(ctx, targets)
        else:
            for target in targets:
                snapshot.restore_workload(target.workload)
            found = []
    finally:
        snapshot.remove_usage(cq, usage)
    return found


def _by_queue(candidates: Sequence[Candidate]) -> dict[str, list[Candidate]]:
    out: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        out.setdefault(candidate.cluster_queue, []).append(candidate)
    return out


def _first(
    ctx: _Context, candidates: Sequence[Candidate], strategy: str
) -> tuple[bool, list[Target], list[Candidate]]:
    ordering = _Ordering(ctx, _by_queue(candidates))
    targets: list[Target] = []
    retry: list[Candidate] = []
    within_nominal = ctx.within_nominal()
    while (queue := ordering.next()) is not None:
        if queue is ctx.cq.node or within_nominal:
            victim = ordering.pop(queue)
            ctx.snapshot.remove_workload(victim)
            reason = IN_CLUSTER_QUEUE if queue is ctx.cq.node else IN_COHORT_RECLAMATION
            targets.append(Target(victim, reason))
            if ctx.fits():
                return True, targets, []
            continue
        mine, theirs = ctx.almost_lcas(queue)
        preemptor_share, target_before = ctx.share(mine), ctx.share(theirs)
        while ordering.has(queue):
            victim = ordering.pop(queue)
            ctx.snapshot.remove_workload(victim)
            target_after = ctx.share(theirs)
            if _passes(strategy, preemptor_share, target_before, target_after):
                targets.append(Target(victim, IN_COHORT_FAIR_SHARING))
                if ctx.fits():
                    return True, targets, []
                break  # the shares moved: the next queue may differ
            ctx.snapshot.restore_workload(victim)
            retry.append(victim)
    return False, targets, retry


def _second(
    ctx: _Context, retry: Sequence[Candidate], targets: list[Target]
) -> tuple[bool, list[Target]]:
    """Rule S2-b on the candidates the first strategy left: one per queue at most."""
    ordering = _Ordering(ctx, _by_queue(retry))
    while (queue := ordering.next()) is not None:
        mine, theirs = ctx.almost_lcas(queue)
        victim = ordering.pop(queue)
        if _passes(INITIAL, ctx.share(mine), ctx.share(theirs), ctx.share(theirs)):
            ctx.snapshot.remove_workload(victim)
            targets.append(Target(victim, IN_COHORT_FAIR_SHARING))
            if ctx.fits():
                return True, targets
        ordering.drop(queue)
    return False, targets


def _passes(strategy: str, preemptor: DRS, before: DRS, after: DRS) -> bool:
    if strategy == FINAL:
        return compare_drs(preemptor, after) <= 0
    return compare_drs(preemptor, before) < 0


def _fewest(ctx: _Context, targets: list[Target]) -> list[Target]:
    """Give back, newest choice first, every victim the preemptor fits without."""
    kept = list(targets)
    for target in reversed(targets[:-1]):
        ctx.snapshot.restore_workload(target.workload)
        if ctx.fits():
            kept.remove(target)
        else:
            ctx.snapshot.remove_workload(target.workload)
    for target in kept:
        ctx.snapshot.restore_workload(target.workload)
    return kept


class _Ordering:
    """Target queues, highest share first, from the root down (Kueue's TargetClusterQueue
    ordering); a queue is pruned once it has no candidates or no longer borrows."""

    def __init__(self, ctx: _Context, queues: dict[str, list[Candidate]]) -> None:
        self.ctx = ctx
        self.queues = queues
        self.pruned: set[int] = set()

    def has(self, node: QuotaNode) -> bool:
        return bool(self.queues.get(node.name))

    def pop(self, node: QuotaNode) -> Candidate:
        return self.queues[node.name].pop(0)

    def drop(self, node: QuotaNode) -> None:
        self.pruned.add(node.index)

    def next(self) -> QuotaNode | None:
        own = self.ctx.cq.node
        if own.parent is None:
            return own if own.index not in self.pruned and self.has(own) else None
        root = own.root()
        while root.index not in self.pruned:
            found = self._next(root)
            if found is not None:
                return found
        return None

    def _next(self, cohort: QuotaNode) -> QuotaNode | None:
        best_queue, queue_share = None, NEGATIVE_DRS
        best_cohort, cohort_share = None, NEGATIVE_DRS
        for child in cohort.children:
            if child.index in self.pruned:
                continue
            share = self.ctx.share(child)
            if child.is_cluster_queue:
                if (not share.borrowing and child is not self.ctx.cq.node) or not self.has(child):
                    self.pruned.add(child.index)
                elif compare_drs(share, queue_share) > 0:
                    best_queue, queue_share = child, share
            elif not share.borrowing and child.index not in self.ctx.path:
                self.pruned.add(child.index)
            elif compare_drs(share, cohort_share) >= 0:
                best_cohort, cohort_share = child, share
        if best_cohort is None and best_queue is None:
            self.pruned.add(cohort.index)
            return None
        if best_cohort is not None and compare_drs(cohort_share, queue_share) >= 0:
            return self._next(best_cohort)
        return best_queue
