"""One tuple object per ``(flavor, resource)`` pair.

Usage and quota maps are keyed by these pairs and read many times for every head a cycle
tries. A dict lookup with the very key object the map holds skips comparing two tuples,
which otherwise cost about a tenth of a cycle (callgrind, mode A's mix one arrival at a time).
The pairs are few: the flavors and resources that ClusterQueues and admissions name.
"""

from __future__ import annotations

from kq.api.quotas import FlavorResource

_PAIRS: dict[str, dict[str, FlavorResource]] = {}


def flavor_resource(flavor: str, resource: str) -> FlavorResource:
    """The shared ``(flavor, resource)`` tuple; looked up by the strings, which is cheap."""
    by_resource = _PAIRS.get(flavor)
    if by_resource is None:
        by_resource = _PAIRS[flavor] = {}
    pair = by_resource.get(resource)
    if pair is None:
        pair = by_resource[resource] = (flavor, resource)
    return pair
