"""Cohort spec: an optional parent and an additional quota pool for its subtree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kq.api.invalid import Invalid, ParseError
from kq.api.quantity import parse_quantity
from kq.api.quotas import (
    FlavorResource,
    ResourceGroup,
    ResourceQuota,
    parse_resource_groups,
    quotas_by_flavor_resource,
)


@dataclass(frozen=True, slots=True)
class Cohort:
    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    quotas: Mapping[FlavorResource, ResourceQuota] = field(default_factory=dict)
    fair_weight: float = 1.0


def parse_cohort(obj: Mapping[str, Any]) -> Cohort | Invalid:
    name = str((obj.get("metadata") or {}).get("name", ""))
    spec = obj.get("spec") or {}
    try:
        parent = spec.get("parentName") or spec.get("parent") or None
        groups = parse_resource_groups(
            spec.get("resourceGroups"), has_parent=parent is not None, check_lending=False
        )
        weight = fair_weight(spec.get("fairSharing"))
        return Cohort(name, parent, groups, quotas_by_flavor_resource(groups), weight)
    except (KeyError, TypeError, ValueError, ParseError) as error:
        return Invalid("Cohort", name, "InvalidSpec", f"invalid spec: {error}")


def fair_weight(raw: Mapping[str, Any] | None) -> float:
    """``fairSharing.weight`` as a number (a quantity: "0", "0.5", "2"); 1 when unset."""
    weight = (raw or {}).get("weight")
    if weight is None:
        return 1.0
    value = float(parse_quantity(weight))
    if value < 0:
        raise ParseError("fairSharing.weight: must not be negative")
    return value
