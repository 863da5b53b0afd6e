"""A pod's nodeSelector and required node affinity (expressions, fields) against one node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kq.api.selectors import parse_node_constraints


def matches_node(spec: Mapping[str, Any], name: str, node_labels: Mapping[str, str]) -> bool:
    """Whether pod ``spec``'s nodeSelector and required node affinity admit node ``name``."""
    constraints = parse_node_constraints(spec)
    if any(node_labels.get(k) != v for k, v in constraints.node_selector):
        return False
    terms = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    raw_terms = terms.get("nodeSelectorTerms") or []
    if not raw_terms:
        return True
    fields = {"metadata.name": name}
    for raw, exprs in zip(raw_terms, constraints.terms, strict=True):
        field_ok = all(_field_matches(f, fields) for f in raw.get("matchFields") or ())
        if (
            (exprs or raw.get("matchFields"))
            and field_ok
            and all(r.matches(node_labels) for r in exprs)
        ):
            return True
    return False


def _field_matches(requirement: Mapping[str, Any], fields: Mapping[str, str]) -> bool:
    value = fields.get(str(requirement.get("key")))
    values = requirement.get("values") or []
    if requirement.get("operator") == "In":
        return value in values
    if requirement.get("operator") == "NotIn":
        return value not in values
    return False
