"""Resource groups and per-flavor quotas, shared by ClusterQueue and Cohort specs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kq.api.invalid import ParseError
from kq.api.quantity import QuantityError, to_amount

FlavorResource = tuple[str, ...]
"""``(flavor, resource)``: the key of every quota and usage number. Not ``tuple[str, str]``:
compiled (mypyc), a fixed-length tuple is kept unboxed and boxed anew at each use as a key,
so every lookup would hash a new tuple and compare it with the map's (``kq.api.interning``)."""


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    resources: Mapping[str, ResourceQuota]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]

    @property
    def flavor_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.flavors)


def _amount(resource: str, raw: object, field: str) -> int:
    try:
        value = to_amount(resource, raw)
    except QuantityError as error:
        raise ParseError(f"{field}: {error}") from None
    if value < 0:
        raise ParseError(f"{field}: must be greater than or equal to 0")
    return value


def _resources_named_by_first_flavor(group: Mapping[str, Any]) -> tuple[str, ...]:
    flavors = group.get("flavors") or ()
    return (
        tuple(str(r.get("name", "")) for r in (flavors[0].get("resources") or ()))
        if flavors
        else ()
    )


def parse_resource_groups(
    raw: Sequence[Mapping[str, Any]] | None, *, has_parent: bool, check_lending: bool
) -> tuple[ResourceGroup, ...]:
    """Validate as Kueue's webhook does: unique resources/flavors, names in covered order."""
    groups = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    for gi, group in enumerate(raw or ()):
        covered = tuple(str(r) for r in group.get("coveredResources") or ())
        if not covered:
            # Kueue requires coveredResources; GKE's documented manifests (scenario S2) omit
            # it, and the flavors' resource lists say unambiguously what the group covers.
            covered = _resources_named_by_first_flavor(group)
        for resource in covered:
            if resource in seen_resources:
                raise ParseError(f"resourceGroups[{gi}]: resource {resource} is in several groups")
            seen_resources.add(resource)
        flavors = []
        for fi, flavor in enumerate(group.get("flavors") or ()):
            fname = str(flavor.get("name", ""))
            if fname in seen_flavors:
                raise ParseError(f"resourceGroups[{gi}]: flavor {fname} is in several groups")
            seen_flavors.add(fname)
            resources = flavor.get("resources") or ()
            names = tuple(str(r.get("name", "")) for r in resources)
            if names != covered:
                raise ParseError(
                    f"resourceGroups[{gi}].flavors[{fi}]: resources must match coveredResources"
                )
            quotas: dict[str, ResourceQuota] = {}
            for ri, res in enumerate(resources):
                name = names[ri]
                path = f"resourceGroups[{gi}].flavors[{fi}].resources[{ri}]"
                nominal = _amount(name, res.get("nominalQuota", 0), f"{path}.nominalQuota")
                bl = res.get("borrowingLimit")
                ll = res.get("lendingLimit")
                if (bl is not None or ll is not None) and not has_parent:
                    raise ParseError(f"{path}: borrowingLimit/lendingLimit need a cohort")
                borrowing = None if bl is None else _amount(name, bl, f"{path}.borrowingLimit")
                lending = None if ll is None else _amount(name, ll, f"{path}.lendingLimit")
                if check_lending and lending is not None and lending > nominal:
                    raise ParseError(
                        f"{path}.lendingLimit: must be less than or equal to nominalQuota"
                    )
                quotas[name] = ResourceQuota(nominal, borrowing, lending)
            flavors.append(FlavorQuotas(fname, quotas))
        groups.append(ResourceGroup(covered, tuple(flavors)))
    return tuple(groups)


def quotas_by_flavor_resource(
    groups: Sequence[ResourceGroup],
) -> dict[FlavorResource, ResourceQuota]:
    return {
        (flavor.name, resource): quota
        for group in groups
        for flavor in group.flavors
        for resource, quota in flavor.resources.items()
    }
