"""Flavor assignment for a whole workload: pod sets in order, one flavor per resource group."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kq.api.interning import flavor_resource
from kq.api.quantity import format_amount
from kq.api.quotas import FlavorResource, ResourceGroup
from kq.api.selectors import first_untolerated
from kq.api.workload import EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR, WAITING_FOR_QUOTA, PodSet
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.scheduler.modes import (
    FIT,
    NO_FIT,
    AdmissionTerms,
    FlavorOption,
    Mode,
    severity,
)
from kq.scheduler.protocols import FlavorAssigner
from kq.workload.info import WorkloadInfo

PreemptionOracle = Callable[[FlavorResource, int], tuple[Mode, int]]
"""Simulates preemption for one FR and amount: (RECLAIM|PREEMPT|NO_CANDIDATES, borrowing)."""


@dataclass(init=False, slots=True)
class PodSetResult:
    name: Final[str]
    count: Final[int]
    flavors: Final[Mapping[str, str]]
    resource_usage: Final[Mapping[str, int]]
    mode: Final[Mode]
    reasons: Final[tuple[str, ...]]

    def __init__(
        self,
        name: str,
        count: int,
        flavors: Mapping[str, str],
        resource_usage: Mapping[str, int],
        mode: Mode,
        reasons: tuple[str, ...],
    ) -> None:
        self.name = name
        self.count = count
        self.flavors = flavors
        self.resource_usage = resource_usage
        self.mode = mode
        self.reasons = reasons


@dataclass(init=False, slots=True)
class Assignment:
    pod_sets: Final[tuple[PodSetResult, ...]]
    usage: Final[Mapping[FlavorResource, int]]
    borrowing: Final[int]
    mode: Final[Mode]
    """Worst over pod sets: NO_FIT, a preemption mode, or FIT."""
    flavors_tried: Final[Mapping[str, tuple[FlavorOption, ...]]]
    """Per pod set, every flavor option evaluated, for traces and explanations."""
    no_fit_reason: Final[str]
    """When NO_FIT, the ``QuotaReserved`` reason (most severe over the failed pod set)."""

    def __init__(
        self,
        pod_sets: tuple[PodSetResult, ...],
        usage: Mapping[FlavorResource, int],
        borrowing: int,
        mode: Mode,
        flavors_tried: Mapping[str, tuple[FlavorOption, ...]] | None = None,
        no_fit_reason: str = "",
    ) -> None:
        self.pod_sets = pod_sets
        self.usage = usage
        self.borrowing = borrowing
        self.mode = mode
        self.flavors_tried = {} if flavors_tried is None else flavors_tried
        self.no_fit_reason = no_fit_reason

    @property
    def fits(self) -> bool:
        return self.mode is FIT

    @property
    def needs_preemption(self) -> bool:
        return NO_FIT < self.mode < FIT

    def message(self) -> str:
        return "; ".join(
            f"couldn't assign flavors to pod set {ps.name}: {', '.join(sorted(ps.reasons))}"
            for ps in self.pod_sets
            if ps.mode is not FIT
        )


def _worse(a: Mode, b: Mode) -> Mode:
    return a if a < b else b


class _Evaluator:
    """Evaluates flavors for one workload against one ClusterQueue snapshot."""

    __slots__ = ("borrow_only", "cq", "oracle", "snapshot")  # one per head: no __dict__

    def __init__(
        self,
        snapshot: Snapshot,
        cq: ClusterQueueSnapshot,
        oracle: PreemptionOracle,
        terms: AdmissionTerms | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.cq = cq
        self.oracle = oracle
        self.borrow_only = terms.reason if terms is not None and terms.borrow_only else None

    def can_preempt_while_borrowing(self) -> bool:
        """Asked only of a flavor that doesn't fit as it is, so not worked out up front."""
        policy = self.cq.spec.preemption
        # Under fair sharing, reclaiming is how a queue gets its fair share, borrowing or not.
        return policy.borrow_within_cohort != "Never" or (
            self.snapshot.fair_sharing is not None and policy.reclaim_within_cohort != "Never"
        )

    def eligibility(self, flavor_name: str, pod_set: PodSet) -> str | None:
        flavor = self.snapshot.flavors.get(flavor_name)
        if flavor is None:
            return f"flavor {flavor_name} not found"
        if not flavor.node_taints and not flavor.node_labels:
            return None  # nothing to tolerate or match: the common case, answered at once
        taint = first_untolerated(flavor.node_taints, (*pod_set.tolerations, *flavor.tolerations))
        if taint is not None:
            return f"untolerated taint {taint} in flavor {flavor_name}"
        if not pod_set.node_constraints.matches_flavor(flavor.node_labels):
            return f"flavor {flavor_name} doesn't match node affinity"
        return None

    def quota(self, fr: FlavorResource, assumed: int, request: int) -> tuple[Mode, int, str, str]:
        """Mode, borrowing height, reason text (empty on fit) and NoFit reason for one FR."""
        snapshot, cq = self.snapshot, self.cq
        value = assumed + request
        resource, flavor = fr[1], fr[0]
        potential = snapshot.potential_available(cq, fr)
        if value > potential:  # rare: the messages are built only on the failing paths
            return (
                NO_FIT,
                0,
                f"insufficient quota for {resource} in flavor {flavor}, previously considered "
                f"podsets requests ({format_amount(resource, assumed)}) + current podset request "
                f"({format_amount(resource, request)}) > maximum capacity "
                f"({format_amount(resource, potential)})",
                EXCEEDS_MAX_QUOTA,
            )
        if self.borrow_only is not None:
            return self._borrowed(fr, value)
        borrowing, may_reclaim = snapshot.usage.borrowing_height(cq.node, fr, value)
        available = snapshot.available(cq, fr)
        if value <= available:
            return FIT, borrowing, "", ""
        reason = (
            f"insufficient unused quota for {resource} in flavor {flavor}, "
            f"{format_amount(resource, value - available)} more needed"
        )
        if snapshot.nominal(cq, fr) >= value or may_reclaim or self.can_preempt_while_borrowing():
            mode, borrowing = self.oracle(fr, value)
            return mode, borrowing, reason, ""
        return NO_FIT, borrowing, reason, WAITING_FOR_QUOTA

    def _borrowed(self, fr: FlavorResource, value: int) -> tuple[Mode, int, str, str]:
        """``quota`` for a borrow-only head: ``value`` on top of the ClusterQueue's unused
        nominal quota must fit, so that what it takes is what the cohort lends; no preemption."""
        snapshot, cq = self.snapshot, self.cq
        needed = value + max(0, snapshot.nominal(cq, fr) - snapshot.used(cq, fr))
        available = snapshot.available(cq, fr)
        if needed <= available:
            return FIT, snapshot.usage.borrowing_height(cq.node, fr, needed)[0], "", ""
        resource, flavor = fr[1], fr[0]
        reason = (
            f"{self.borrow_only}: insufficient quota to borrow for {resource} in flavor "
            f"{flavor} beyond the ClusterQueue's own, {format_amount(resource, needed - available)}"
            " more needed"
        )
        return NO_FIT, 0, reason, WAITING_FOR_QUOTA

    def options(
        self,
        group: ResourceGroup,
        pod_set: PodSet,
        requests: Mapping[str, int],
        assumed: Mapping[FlavorResource, int],
        reasons: list[str],
        seen: list[FlavorOption],
    ) -> Iterator[FlavorOption]:
        """Each flavor of the group in order, also added to ``seen`` as it is evaluated; every
        reason found is also added to ``reasons``."""
        for flavor_quotas in group.flavors:
            flavor = flavor_quotas.name
            ineligible = self.eligibility(flavor, pod_set)
            if ineligible is not None:
                reasons.append(ineligible)
                option = FlavorOption(flavor, NO_FIT, 0, (ineligible,), {}, NO_MATCHING_FLAVOR)
                seen.append(option)
                yield option
                continue
            mode, borrowing, found, no_fit = FIT, 0, [], ""
            usage = {}
            for resource, amount in requests.items():
                fr = flavor_resource(flavor, resource)
                fr_mode, fr_borrowing, reason, fr_no_fit = self.quota(
                    fr, assumed.get(fr, 0), amount
                )
                if reason:
                    found.append(reason)
                    if severity(fr_no_fit) > severity(no_fit):
                        no_fit = fr_no_fit
                if fr_mode < mode:
                    mode = fr_mode
                if fr_borrowing > borrowing:
                    borrowing = fr_borrowing
                usage[fr] = amount
                if mode is NO_FIT:
                    break
            reasons.extend(found)
            option = FlavorOption(flavor, mode, borrowing, tuple(found), usage, no_fit)
            seen.append(option)
            yield option


def _scaled(pod_set: PodSet, count: int, counts_pods: bool) -> dict[str, int]:
    """Total requests at ``count``; a queue that covers ``pods`` also gets one per pod."""
    requests = {r: v * count for r, v in pod_set.requests.items() if v}
    if counts_pods and count:
        requests["pods"] = count
    return requests


def _group_no_fit_reason(options: Iterable[FlavorOption]) -> str:
    """The mildest NoFit reason among a group's flavors: they are alternatives."""
    reasons = [o.no_fit_reason for o in options if o.mode is NO_FIT]
    return min(reasons, key=severity) if reasons else ""


def assign_flavors(
    snapshot: Snapshot,
    cq: ClusterQueueSnapshot,
    workload: WorkloadInfo,
    assigner: FlavorAssigner,
    oracle: PreemptionOracle,
    counts: Mapping[str, int] | None = None,
    terms: AdmissionTerms | None = None,
) -> Assignment:
    """Assign pod sets in order (at ``counts``, default full size) as the CQ's assigner chooses.

    As upstream, the first pod set that gets no flavor ends the assignment, and its message
    carries only the reasons of the resource group that failed.
    """
    evaluator = _Evaluator(snapshot, cq, oracle, terms)
    pod_sets = workload.obj.pod_sets
    if len(pod_sets) == 1 and len(cq.spec.resource_groups) == 1:
        single = _single_group(evaluator, pod_sets[0], counts, assigner)
        if single is not None:
            return single
    return _in_order(evaluator, pod_sets, counts, assigner)


def _in_order(
    evaluator: _Evaluator,
    pod_sets: Sequence[PodSet],
    counts: Mapping[str, int] | None,
    assigner: FlavorAssigner,
) -> Assignment:
    """The general path of ``assign_flavors``: each pod set, each resource group it needs."""
    spec = evaluator.cq.spec
    total_usage: dict[FlavorResource, int] = {}
    results = []
    mode, borrowing, no_fit_reason = FIT, 0, ""
    tried: dict[str, tuple[FlavorOption, ...]] = {}
    counts_pods = spec.group_for("pods") is not None
    for pod_set in pod_sets:
        count = pod_set.count if counts is None else counts[pod_set.name]
        requests = _scaled(pod_set, count, counts_pods)
        flavors: dict[str, str] = {}
        reasons: list[str] = []
        ps_mode, ps_no_fit = FIT, ""
        considered: list[FlavorOption] = []
        for resource in sorted(requests):
            if resource in flavors:
                continue
            group = spec.group_for(resource)
            if group is None:
                reasons = [f"resource {resource} unavailable in ClusterQueue"]
                ps_mode, ps_no_fit = NO_FIT, NO_MATCHING_FLAVOR
                break
            group_requests = {r: v for r, v in requests.items() if r in group.covered_resources}
            group_reasons: list[str] = []
            seen: list[FlavorOption] = []
            options = evaluator.options(
                group, pod_set, group_requests, total_usage, group_reasons, seen
            )
            chosen = assigner.choose(spec, options)
            considered += seen
            if group_reasons:  # only a flavor with reasons can have failed
                group_no_fit = _group_no_fit_reason(seen)
                if severity(group_no_fit) > severity(ps_no_fit):
                    ps_no_fit = group_no_fit
            if chosen is None or chosen.mode is NO_FIT:
                reasons, ps_mode = group_reasons, NO_FIT
                break
            if chosen.mode is not FIT:
                reasons += group_reasons
            ps_mode = _worse(ps_mode, chosen.mode)
            borrowing = max(borrowing, chosen.borrowing)
            for resource_name in group_requests:
                flavors[resource_name] = chosen.flavor
            for fr, amount in chosen.usage.items():
                total_usage[fr] = total_usage.get(fr, 0) + amount
        tried[pod_set.name] = tuple(considered)
        mode = _worse(mode, ps_mode)
        results.append(
            PodSetResult(
                pod_set.name,
                count,
                flavors,
                {r: v for r, v in requests.items() if r in flavors},
                ps_mode,
                tuple(reasons) if ps_mode is not FIT else (),
            )
        )
        if ps_mode is NO_FIT:
            if severity(ps_no_fit) > severity(no_fit_reason):
                no_fit_reason = ps_no_fit
            break
    return Assignment(tuple(results), total_usage, borrowing, mode, tried, no_fit_reason)


def _single_group(
    evaluator: _Evaluator,
    pod_set: PodSet,
    counts: Mapping[str, int] | None,
    assigner: FlavorAssigner,
) -> Assignment | None:
    """``assign_flavors`` for one pod set whose requests the queue's one resource group all
    covers, the common case, without ``_in_order``'s per-resource bookkeeping; ``None``
    otherwise. Same result as ``_in_order`` (tests/core/test_assignment_fast.py)."""
    spec = evaluator.cq.spec
    count = pod_set.count if counts is None else counts[pod_set.name]
    group = spec.resource_groups[0]
    covered = group.covered_resources
    requests = _scaled(pod_set, count, "pods" in covered)
    if not requests or not all(r in covered for r in requests):
        return None
    reasons: list[str] = []
    seen: list[FlavorOption] = []
    options = evaluator.options(group, pod_set, requests, {}, reasons, seen)
    chosen = assigner.choose(spec, options)
    tried = {pod_set.name: tuple(seen)}
    if chosen is None or chosen.mode is NO_FIT:
        no_fit = _group_no_fit_reason(seen) if reasons else ""
        failed = PodSetResult(pod_set.name, count, {}, {}, NO_FIT, tuple(reasons))
        return Assignment((failed,), {}, 0, NO_FIT, tried, no_fit)
    mode = _worse(FIT, chosen.mode)
    flavors = dict.fromkeys(requests, chosen.flavor)
    held = tuple(reasons) if mode is not FIT else ()
    result = PodSetResult(pod_set.name, count, flavors, requests, mode, held)
    return Assignment((result,), dict(chosen.usage), max(0, chosen.borrowing), mode, tried)


def assign_partially(
    snapshot: Snapshot,
    cq: ClusterQueueSnapshot,
    workload: WorkloadInfo,
    assigner: FlavorAssigner,
    oracle: PreemptionOracle,
    acceptable: Callable[[Assignment], bool],
    terms: AdmissionTerms | None = None,
) -> Assignment | None:
    """Largest reduced counts (toward ``minCount``) whose assignment is acceptable."""
    pod_sets = workload.obj.pod_sets
    deltas = {ps.name: ps.count - ps.min_count for ps in pod_sets if ps.min_count is not None}
    total = sum(deltas.values())
    if total == 0:
        return None

    def counts(k: int) -> dict[str, int]:
        return {ps.name: ps.count - deltas.get(ps.name, 0) * k // total for ps in pod_sets}

    low, high, best = 1, total, None
    while low <= high:
        middle = (low + high) // 2
        candidate = assign_flavors(snapshot, cq, workload, assigner, oracle, counts(middle), terms)
        if acceptable(candidate):
            best, high = candidate, middle - 1
        else:
            low = middle + 1
    return best
