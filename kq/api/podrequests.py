"""Per-pod resource requests from a pod spec, as Kubernetes' PodRequests computes them.

A pod spec is parsed once into ``PodResources`` (each container's requests and limits as
written); Kueue's adjustments (LimitRange defaults, limits standing in for missing requests)
and its validation work on that value, not on the raw spec.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

from kq.api.quantity import to_amount

Amounts = Mapping[str, int]
EMPTY: Amounts = MappingProxyType({})

REQUESTS_ABOVE_LIMITS = "requests must not exceed its limits"


class Container(NamedTuple):
    requests: Amounts = EMPTY
    limits: Amounts = EMPTY
    sidecar: bool = False
    """An init container with ``restartPolicy: Always``: it keeps running beside the others."""


class PodResources(NamedTuple):
    """A pod spec's container resources as written, before any defaulting."""

    init_containers: tuple[Container, ...] = ()
    containers: tuple[Container, ...] = ()
    overhead: Amounts = EMPTY


# Tuples, not dataclasses, and one shared empty container: every Workload's pod sets are
# parsed into these, so their cost is paid on every workload created.
_NO_RESOURCES = Container()


def _amounts(raw: Mapping[str, Any] | None) -> Amounts:
    if not raw:
        return EMPTY
    return {str(name): to_amount(str(name), value) for name, value in raw.items()}


def _container(raw: Mapping[str, Any], init: bool = False) -> Container:
    resources = raw.get("resources")
    sidecar = init and raw.get("restartPolicy") == "Always"
    if not resources and not sidecar:
        return _NO_RESOURCES
    resources = resources or {}
    return Container(
        _amounts(resources.get("requests")), _amounts(resources.get("limits")), sidecar
    )


def parse_pod_resources(spec: Mapping[str, Any]) -> PodResources:
    inits: Sequence[Mapping[str, Any]] = spec.get("initContainers") or ()
    return PodResources(
        tuple([_container(c, True) for c in inits]),
        tuple([_container(c) for c in spec.get("containers") or ()]),
        _amounts(spec.get("overhead")),
    )


def effective_requests(container: Container) -> Amounts:
    """Requests, with limits standing in for the missing ones (as the API server defaults)."""
    if not container.limits:
        return container.requests
    return {**container.limits, **container.requests}


def _add(total: dict[str, int], extra: Amounts) -> None:
    for name, value in extra.items():
        total[name] = total.get(name, 0) + value


def _max(total: dict[str, int], other: Amounts) -> None:
    for name, value in other.items():
        total[name] = max(total.get(name, 0), value)


def total_requests(pod: PodResources) -> dict[str, int]:
    """Sum of containers, max with each init step (sidecars accumulate), plus overhead."""
    total: dict[str, int] = {}
    for container in pod.containers:
        _add(total, effective_requests(container))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in pod.init_containers:
        requests = effective_requests(container)
        if container.sidecar:
            _add(sidecars, requests)
            _max(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add(step, requests)
            _max(init_peak, step)
    _add(total, sidecars)
    _max(total, init_peak)
    _add(total, pod.overhead)
    return total


def nonzero(amounts: Amounts) -> dict[str, int]:
    return {name: value for name, value in amounts.items() if value}


def requests_of(pod: PodResources) -> Amounts:
    """The pod's requests, zero amounts left out (a lone container's own mapping, if it can)."""
    if len(pod.containers) == 1 and not pod.init_containers and not pod.overhead:
        only = effective_requests(pod.containers[0])
        if all(only.values()):
            return only
    return nonzero(total_requests(pod))


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """The pod's requests, zero amounts left out."""
    return nonzero(total_requests(parse_pod_resources(spec)))


# -- validation, worded as Kubernetes' field.Error ----------------------------------------


def greater_keys(values: Amounts, bounds: Amounts) -> list[str]:
    """Resources in both whose value exceeds the bound, sorted."""
    return sorted(name for name, value in values.items() if name in bounds and value > bounds[name])


def field_invalid(path: str, names: Sequence[str], detail: str) -> str:
    """``field.Invalid(path, names, detail).Error()``: the names print as a JSON list."""
    return f"{path}: Invalid value: {json.dumps(list(names), separators=(',', ':'))}: {detail}"


def aggregate(errors: Iterable[str]) -> str:
    """An error list as Kubernetes' aggregate prints it: one alone, several in brackets."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def container_paths(pod: PodResources, path: str) -> Iterable[tuple[str, Container]]:
    """Every container with its field path, init containers first (Kueue's order)."""
    for i, container in enumerate(pod.init_containers):
        yield f"{path}.initContainers[{i}]", container
    for i, container in enumerate(pod.containers):
        yield f"{path}.containers[{i}]", container


def has_limits(pod: PodResources) -> bool:
    return any(c.limits for c in pod.containers) or any(c.limits for c in pod.init_containers)


def requests_above_limits(pod: PodResources, path: str) -> tuple[str, ...]:
    """Containers whose (defaulted) requests exceed their limits."""
    errors = []
    for where, container in container_paths(pod, path):
        if container.limits:
            names = greater_keys(effective_requests(container), container.limits)
            if names:
                errors.append(field_invalid(where, names, REQUESTS_ABOVE_LIMITS))
    return tuple(errors)
