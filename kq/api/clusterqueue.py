"""ClusterQueue spec: quotas, cohort, queueing, fungibility, preemption and selection knobs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kq.api.cohort import fair_weight
from kq.api.invalid import Invalid, ParseError
from kq.api.quotas import (
    FlavorResource,
    ResourceGroup,
    ResourceQuota,
    parse_resource_groups,
    quotas_by_flavor_resource,
)
from kq.api.selectors import LabelSelector, parse_label_selector

FLAVOR_ASSIGNER_ANNOTATION = "kq.dev/flavor-assignment"
"""kq's per-ClusterQueue choice of flavor assigner; Kueue's schema has no such field."""
DEFAULT_FLAVOR_ASSIGNER = "InOrder"
QUEUEING_STRATEGY_ANNOTATION = "kq.dev/queueing-strategy"
"""Names a registered queueing strategy, in place of ``spec.queueingStrategy`` (whose schema
allows Kueue's two only), so a third-party strategy can be chosen."""
PREEMPTION_POLICY_ANNOTATION = "kq.dev/preemption-policy"
"""kq's per-ClusterQueue choice of preemption policy plugin."""
DEFAULT_PREEMPTION_POLICY = "ClassicPreemption"
HOT_SWAP_ANNOTATION = "kq.dev/hot-swap"
"""kq's per-ClusterQueue choice of hot-swap policy: what to do when a node under an admitted
workload fails."""
DEFAULT_HOT_SWAP = "SliceHotSwap"
IGNORED_PREEMPTION_FIELDS = ("reclaimOutOfCohort",)
"""Published (GKE) manifests set these; no Kueue version defines them."""


def _ignored(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """Fields kq keeps but does not act on: GKE's extra preemption field, and fair sharing's
    weight, which waits for fair sharing itself."""
    found = [
        f"spec.preemption.{name}"
        for name in IGNORED_PREEMPTION_FIELDS
        if name in (spec.get("preemption") or {})
    ]
    if "fairSharing" in spec:
        found.append("spec.fairSharing")
    return tuple(found)


USAGE_BASED_ADMISSION_FAIR_SHARING = "UsageBasedAdmissionFairSharing"
NO_ADMISSION_FAIR_SHARING = "NoAdmissionFairSharing"


def _admission_mode(scope: object) -> str:
    if scope is None:
        return NO_ADMISSION_FAIR_SHARING
    mode = (scope if isinstance(scope, dict) else {}).get("admissionMode")
    if mode is None:
        raise ParseError("admissionScope.admissionMode: Required value")
    allowed = (USAGE_BASED_ADMISSION_FAIR_SHARING, NO_ADMISSION_FAIR_SHARING)
    return _choice(mode, allowed, "", "admissionScope.admissionMode")


MAY_STOP_SEARCH = "MayStopSearch"
TRY_NEXT_FLAVOR = "TryNextFlavor"
_FUNGIBILITY_ALIASES = {"Borrow": MAY_STOP_SEARCH, "Preempt": MAY_STOP_SEARCH}


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str | None = None


@dataclass(frozen=True, slots=True)
class PreemptionPolicy:
    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue:
    name: str
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str | None = None
    queueing_strategy: str = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    preemption: PreemptionPolicy = PreemptionPolicy()
    admission_checks: tuple[str, ...] = ()
    check_flavors: tuple[frozenset[str], ...] = ()
    """Per check in ``admission_checks``, its ``onFlavors``; empty applies to every flavor."""
    stop_policy: str = "None"
    flavor_assigner: str = DEFAULT_FLAVOR_ASSIGNER
    preemption_policy: str = DEFAULT_PREEMPTION_POLICY
    hot_swap_policy: str = DEFAULT_HOT_SWAP
    fair_weight: float = 1.0
    admission_mode: str = NO_ADMISSION_FAIR_SHARING
    """``spec.admissionScope.admissionMode``: whether admission fair sharing orders its queue."""
    ignored: tuple[str, ...] = ()
    """Fields the manifest sets that are not Kueue's and that kq keeps but does not act on."""
    deleting: bool = False
    quotas: Mapping[FlavorResource, ResourceQuota] = field(default_factory=dict)

    @property
    def flavor_names(self) -> tuple[str, ...]:
        return tuple(n for g in self.resource_groups for n in g.flavor_names)

    def checks_for(self, flavors: Iterable[str]) -> tuple[str, ...]:
        """The checks an admission on ``flavors`` must pass, sorted by name as Kueue lists them."""
        if not self.admission_checks:
            return ()
        used = set(flavors)
        rules = self.check_flavors or (frozenset(),) * len(self.admission_checks)
        return tuple(
            sorted(
                name
                for name, on in zip(self.admission_checks, rules, strict=True)
                if not on or on & used
            )
        )

    def group_for(self, resource: str) -> ResourceGroup | None:
        for group in self.resource_groups:
            if resource in group.covered_resources:
                return group
        return None


def _choice(value: object, allowed: tuple[str, ...], default: str, path: str) -> str:
    if value is None:
        return default
    value = _FUNGIBILITY_ALIASES.get(str(value), str(value))
    if value not in allowed:
        raise ParseError(f"{path}: unsupported value {value!r} (allowed: {', '.join(allowed)})")
    return value


def _fungibility(raw: Mapping[str, Any]) -> FlavorFungibility:
    options = (MAY_STOP_SEARCH, TRY_NEXT_FLAVOR)
    return FlavorFungibility(
        _choice(
            raw.get("whenCanBorrow"), options, MAY_STOP_SEARCH, "flavorFungibility.whenCanBorrow"
        ),
        _choice(
            raw.get("whenCanPreempt"), options, TRY_NEXT_FLAVOR, "flavorFungibility.whenCanPreempt"
        ),
        raw.get("preference"),
    )


def _preemption(raw: Mapping[str, Any]) -> PreemptionPolicy:
    borrow = raw.get("borrowWithinCohort") or {}
    policy = PreemptionPolicy(
        within_cluster_queue=_choice(
            raw.get("withinClusterQueue"),
            ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
            "Never",
            "preemption.withinClusterQueue",
        ),
        reclaim_within_cohort=_choice(
            raw.get("reclaimWithinCohort"),
            ("Never", "LowerPriority", "Any"),
            "Never",
            "preemption.reclaimWithinCohort",
        ),
        borrow_within_cohort=_choice(
            borrow.get("policy"),
            ("Never", "LowerPriority"),
            "Never",
            "preemption.borrowWithinCohort",
        ),
        max_priority_threshold=borrow.get("maxPriorityThreshold"),
    )
    if policy.reclaim_within_cohort == "Never" and policy.borrow_within_cohort != "Never":
        raise ParseError(
            "preemption: borrowWithinCohort needs reclaimWithinCohort other than Never"
        )
    return policy


def parse_cluster_queue(obj: Mapping[str, Any]) -> ClusterQueue | Invalid:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    spec = obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    try:
        cohort = spec.get("cohort") or spec.get("cohortName") or None
        groups = parse_resource_groups(
            spec.get("resourceGroups"), has_parent=cohort is not None, check_lending=True
        )
        checks = [(str(c), frozenset[str]()) for c in spec.get("admissionChecks") or ()]
        for rule in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or ():
            checks.append((str(rule["name"]), frozenset(map(str, rule.get("onFlavors") or ()))))
        return ClusterQueue(
            name=name,
            resource_groups=groups,
            cohort=cohort,
            queueing_strategy=str(
                annotations.get(QUEUEING_STRATEGY_ANNOTATION)
                or spec.get("queueingStrategy")
                or "BestEffortFIFO"
            ),
            # Deviation from Kueue, where an unset selector admits from no namespace: GKE's
            # documented manifests (scenario S2) omit it and expect their jobs to run.
            namespace_selector=parse_label_selector(spec.get("namespaceSelector") or {}),
            flavor_fungibility=_fungibility(spec.get("flavorFungibility") or {}),
            preemption=_preemption(spec.get("preemption") or {}),
            admission_checks=tuple(name for name, _ in checks),
            check_flavors=tuple(on for _, on in checks),
            stop_policy=str(spec.get("stopPolicy") or "None"),
            flavor_assigner=str(
                annotations.get(FLAVOR_ASSIGNER_ANNOTATION) or DEFAULT_FLAVOR_ASSIGNER
            ),
            preemption_policy=str(
                annotations.get(PREEMPTION_POLICY_ANNOTATION) or DEFAULT_PREEMPTION_POLICY
            ),
            hot_swap_policy=str(annotations.get(HOT_SWAP_ANNOTATION) or DEFAULT_HOT_SWAP),
            fair_weight=fair_weight(spec.get("fairSharing")),
            admission_mode=_admission_mode(spec.get("admissionScope")),
            ignored=_ignored(spec),
            deleting=meta.get("deletionTimestamp") is not None,
            quotas=quotas_by_flavor_resource(groups),
        )
    except (KeyError, TypeError, ValueError, ParseError) as error:
        return Invalid("ClusterQueue", name, "InvalidSpec", f"invalid spec: {error}")
