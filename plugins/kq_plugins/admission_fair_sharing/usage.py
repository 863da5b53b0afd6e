"""The arithmetic of admission fair sharing (KEP-4136), pure over plain mappings.

Amounts are floats in each resource's base unit (cores, bytes, devices), as Kueue's
``AsApproximateFloat64``. A LocalQueue's consumed resources are an exponential moving average
of its admitted usage: each sample moves them towards the usage by ``alpha(elapsed)``, so past
usage counts half after one half-life.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from kq.plugin import AdmissionFairSharingConfig, parse_quantity

Amounts = Mapping[str, float]
_NANO = 10**9


def alpha(elapsed: float, half_life: float) -> float:
    """The weight of the newest sample after ``elapsed`` seconds; 0 without a half-life."""
    if half_life <= 0:
        return 0.0
    return 1.0 - float(0.5 ** (max(0.0, elapsed) / half_life))


def decayed(old: Amounts, live: Amounts, elapsed: float, half_life: float) -> dict[str, float]:
    """Consumed resources ``elapsed`` seconds on: the old ones decay towards ``live``."""
    a = alpha(elapsed, half_life)
    out = {name: value * (1.0 - a) for name, value in old.items()}
    for name, value in live.items():
        out[name] = out.get(name, 0.0) + value * a
    return out


def entry_penalty(requests: Amounts, config: AdmissionFairSharingConfig) -> dict[str, float]:
    """What one admission adds at once, until its usage shows in the next samples."""
    a = alpha(config.usage_sampling_interval, config.usage_half_life_time)
    return {name: value * a for name, value in requests.items()}


def added(*amounts: Amounts) -> dict[str, float]:
    out: dict[str, float] = {}
    for each in amounts:
        for name, value in each.items():
            out[name] = out.get(name, 0.0) + value
    return out


def usage(consumed: Amounts, penalty: Amounts, weight: float, resource_weights: Amounts) -> float:
    """The number a ClusterQueue orders LocalQueues by: weighted resources over the queue's
    weight; a weight of 0 (or less) puts the queue last."""
    total = added(consumed, penalty)
    value = sum(resource_weights.get(name, 1.0) * total[name] for name in sorted(total))
    if weight <= 0:
        return math.inf
    return value / weight


def to_quantity(value: float) -> str:
    """A quantity string for ``value``, rounded down to a nano-unit as Kueue stores it."""
    nanos = math.floor(max(0.0, value) * _NANO)
    for unit, suffix in ((_NANO, ""), (10**6, "m"), (10**3, "u")):
        if nanos % unit == 0:
            return f"{nanos // unit}{suffix}"
    return f"{nanos}n"


def from_quantities(raw: object) -> dict[str, float]:
    """Amounts from a ``ResourceList`` (a status written earlier, a pod set's usage)."""
    if not isinstance(raw, Mapping):
        return {}
    return {str(name): float(parse_quantity(value)) for name, value in raw.items()}
