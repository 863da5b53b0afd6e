"""Per-pod resource requests from a pod spec, as Kubernetes' PodRequests computes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kq.api.quantity import to_amount


def _container(container: Mapping[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = {**limits, **(resources.get("requests") or {})}  # missing requests default to limits
    return {str(name): to_amount(str(name), value) for name, value in requests.items()}


def _add(total: dict[str, int], extra: Mapping[str, int]) -> None:
    for name, value in extra.items():
        total[name] = total.get(name, 0) + value


def _max(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        total[name] = max(total.get(name, 0), value)


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Sum of containers, max with each init step (sidecars accumulate), plus overhead."""
    total: dict[str, int] = {}
    for container in spec.get("containers") or ():
        _add(total, _container(container))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    inits: Sequence[Mapping[str, Any]] = spec.get("initContainers") or ()
    for container in inits:
        requests = _container(container)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, requests)
            _max(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add(step, requests)
            _max(init_peak, step)
    _add(total, sidecars)
    _max(total, init_peak)
    overhead = spec.get("overhead") or {}
    _add(total, {str(k): to_amount(str(k), v) for k, v in overhead.items()})
    return {name: value for name, value in total.items() if value}
