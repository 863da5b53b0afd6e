"""LimitRange: a namespace's container and pod bounds and defaults, summarised as Kueue does.

Kueue reads every LimitRange of the Workload's namespace and merges them into one summary per
limit type: the lowest ``max``, the highest ``min``, the first ``default`` and
``defaultRequest`` found. Only the Container and Pod types matter for pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from kq.api.podrequests import (
    EMPTY,
    Amounts,
    Container,
    PodResources,
    container_paths,
    effective_requests,
    field_invalid,
    greater_keys,
    total_requests,
)
from kq.api.quantity import QuantityError, to_amount

CONTAINER = "Container"
POD = "Pod"
ABOVE_MAX = "requests must not be above the limitRange max"
BELOW_MIN = "requests must not be below the limitRange min"


class LimitRangeItem(NamedTuple):
    max: Amounts = EMPTY
    min: Amounts = EMPTY
    default: Amounts = EMPTY
    default_request: Amounts = EMPTY


@dataclass(frozen=True, slots=True)
class LimitRangeSummary:
    container: LimitRangeItem | None = None
    pod: LimitRangeItem | None = None


Limits = tuple[tuple[str, LimitRangeItem], ...]
"""One LimitRange object's Container and Pod items, in spec order."""


def _amounts(raw: Mapping[str, Any] | None) -> Amounts:
    if not raw:
        return EMPTY
    return {str(name): to_amount(str(name), value) for name, value in raw.items()}


def parse_limit_range(obj: Mapping[str, Any]) -> Limits:
    """The pod-related items; an item whose quantities don't parse is left out."""
    items = []
    for raw in (obj.get("spec") or {}).get("limits") or ():
        kind = raw.get("type")
        if kind not in (CONTAINER, POD):
            continue
        try:
            item = LimitRangeItem(
                _amounts(raw.get("max")),
                _amounts(raw.get("min")),
                _amounts(raw.get("default")),
                _amounts(raw.get("defaultRequest")),
            )
        except QuantityError:
            continue
        items.append((str(kind), item))
    return tuple(items)


def _merge(a: Amounts, b: Amounts, pick: Callable[[int, int], int]) -> Amounts:
    """``b``'s resources added to ``a``'s; ``pick`` settles the ones both have."""
    if not a:
        return b
    merged = dict(a)
    for name, value in b.items():
        merged[name] = pick(merged[name], value) if name in merged else value
    return merged


def _first(a: int, _b: int) -> int:
    return a


def _fold(summary: LimitRangeItem | None, item: LimitRangeItem) -> LimitRangeItem:
    if summary is None:
        return item
    return LimitRangeItem(
        _merge(summary.max, item.max, min),
        _merge(summary.min, item.min, max),
        _merge(summary.default, item.default, _first),
        _merge(summary.default_request, item.default_request, _first),
    )


def summarize(ranges: Iterable[Limits]) -> LimitRangeSummary | None:
    """The namespace's summary, or ``None`` when no range bounds containers or pods."""
    container: LimitRangeItem | None = None
    pod: LimitRangeItem | None = None
    for limits in ranges:
        for kind, item in limits:
            if kind == CONTAINER:
                container = _fold(container, item)
            else:
                pod = _fold(pod, item)
    if container is None and pod is None:
        return None
    return LimitRangeSummary(container, pod)


def with_container_defaults(pod: PodResources, item: LimitRangeItem | None) -> PodResources:
    """Missing limits and requests filled from the Container type's defaults."""
    if item is None or not (item.default or item.default_request):
        return pod

    def filled(c: Container) -> Container:
        return Container(
            {**item.default_request, **c.requests} if item.default_request else c.requests,
            {**item.default, **c.limits} if item.default else c.limits,
            c.sidecar,
        )

    return PodResources(
        tuple(filled(c) for c in pod.init_containers),
        tuple(filled(c) for c in pod.containers),
        pod.overhead,
    )


def _bounds(where: str, lowest: Amounts, highest: Amounts, item: LimitRangeItem) -> list[str]:
    errors = []
    if above := greater_keys(highest, item.max):
        errors.append(field_invalid(where, above, ABOVE_MAX))
    if below := greater_keys(item.min, lowest):
        errors.append(field_invalid(where, below, BELOW_MIN))
    return errors


def _spread(c: Container) -> tuple[Amounts, Amounts]:
    """Per resource, the lower and the higher of request and limit (either may be missing)."""
    requests = effective_requests(c)
    if not c.limits:
        return requests, requests
    lowest = {**requests, **{n: min(v, requests[n]) for n, v in c.limits.items()}}
    highest = {**requests, **{n: max(v, requests[n]) for n, v in c.limits.items()}}
    return lowest, highest


def violations(pod: PodResources, summary: LimitRangeSummary, path: str) -> tuple[str, ...]:
    """Containers and the pod outside the summary's bounds (defaults already applied)."""
    errors = []
    if summary.container is not None:
        for where, c in container_paths(pod, path):
            errors += _bounds(where, *_spread(c), summary.container)
    if summary.pod is not None:
        total = total_requests(pod)
        errors += _bounds(path, total, total, summary.pod)
    return tuple(errors)
