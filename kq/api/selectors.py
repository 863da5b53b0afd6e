"""Label selectors, node affinity and taint toleration, evaluated against plain label maps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kq.api.invalid import ParseError


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry (label or node selector requirement)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        op = self.operator
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op in ("Gt", "Lt") and present and len(self.values) == 1:
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == "Gt" else have < want
        return False


def _requirements(raw: Sequence[Mapping[str, Any]] | None) -> tuple[Requirement, ...]:
    out = []
    for item in raw or ():
        operator = str(item.get("operator", ""))
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise ParseError(f"unknown selector operator {operator!r}")
        out.append(Requirement(str(item["key"]), operator, tuple(item.get("values") or ())))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if not self.match_labels and not self.expressions:
            return True  # ``{}``, the usual namespace selector: asked of every head
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            r.matches(labels) for r in self.expressions
        )


def parse_label_selector(raw: Mapping[str, Any] | None) -> LabelSelector | None:
    """``None`` stays ``None`` (Kueue: matches no namespace); ``{}`` matches everything."""
    if raw is None:
        return None
    labels = raw.get("matchLabels") or {}
    return LabelSelector(
        tuple(sorted((str(k), str(v)) for k, v in labels.items())),
        _requirements(raw.get("matchExpressions")),
    )


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


def parse_tolerations(raw: Sequence[Mapping[str, Any]] | None) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            str(t.get("key", "")),
            str(t.get("operator") or "Equal"),
            str(t.get("value", "")),
            str(t.get("effect", "")),
        )
        for t in raw or ()
    )


def parse_taints(raw: Sequence[Mapping[str, Any]] | None) -> tuple[Taint, ...]:
    return tuple(Taint(str(t["key"]), str(t.get("value", "")), str(t["effect"])) for t in raw or ())


def first_untolerated(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration covers (what admission checks)."""
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


@dataclass(frozen=True, slots=True)
class NodeConstraints:
    """A pod's ``nodeSelector`` and required node-affinity terms (ORed)."""

    node_selector: tuple[tuple[str, str], ...] = ()
    terms: tuple[tuple[Requirement, ...], ...] = ()

    def matches_flavor(self, node_labels: Mapping[str, str]) -> bool:
        """Match a fake node with the flavor's labels, ignoring keys the flavor doesn't set."""
        for key, value in self.node_selector:
            if key in node_labels and node_labels[key] != value:
                return False
        reduced = []
        for term in self.terms:
            kept = tuple(r for r in term if r.key in node_labels)
            if not kept:
                return True
            reduced.append(kept)
        return not reduced or any(all(r.matches(node_labels) for r in t) for t in reduced)


NO_NODE_CONSTRAINTS = NodeConstraints()
"""The constraints of most pod sets, one shared instance: scheduling shapes of workloads that
carry it compare equal by identity, not through the dataclass's ``__eq__``."""


def parse_node_constraints(pod_spec: Mapping[str, Any]) -> NodeConstraints:
    selector = pod_spec.get("nodeSelector") or {}
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = tuple(
        _requirements(term.get("matchExpressions"))
        for term in required.get("nodeSelectorTerms") or ()
    )
    if not selector and not terms:
        return NO_NODE_CONSTRAINTS
    return NodeConstraints(tuple(sorted((str(k), str(v)) for k, v in selector.items())), terms)
