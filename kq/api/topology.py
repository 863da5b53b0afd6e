"""Topology-aware scheduling's API shapes: Topology, a pod set's request, an admission's domains.

The Workload fields are Kueue's (``podSets[].topologyRequest``,
``podSetAssignments[].topologyAssignment`` with ``levels`` and ``domains[{values, count}]``).
kq writes assignments with two levels, the requested one and the node name, so a pod can be
pinned to its node and the domain is still readable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kq.api.invalid import Invalid, ParseError

HOSTNAME = "kubernetes.io/hostname"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
"""JobSet's one-Job-per-domain annotation; kq reads it as an exclusive slice request."""
REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE_ANNOTATION = "kueue.x-k8s.io/podset-slice-size"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
"""The scheduling gate on pods whose node kq chooses; removed when the pod is pinned."""
TAS_LABEL = "kueue.x-k8s.io/tas"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """Where a pod set's pods must be: ``level`` is a node label key, or ``None`` for anywhere.

    ``slice_size`` pods form one slice that must share one domain of ``level`` (the whole pod
    set is one slice when it equals the count); ``exclusive`` slices share no domain with any
    other pods kq placed; ``preferred`` lets pods spread when no single domain holds them.
    """

    level: str | None
    slice_size: int
    preferred: bool = False
    exclusive: bool = False
    sub_group_label: str | None = None
    """Pod label whose value is a pod's slice index (JobSet's child Job index)."""


@dataclass(frozen=True, slots=True)
class Topology:
    name: str
    levels: tuple[str, ...]


def parse_topology(obj: Mapping[str, Any]) -> Topology | Invalid:
    name = str((obj.get("metadata") or {}).get("name", ""))
    levels = tuple(
        str(level.get("nodeLabel", "")) for level in (obj.get("spec") or {}).get("levels") or ()
    )
    if not levels or "" in levels:
        return Invalid(
            "Topology", name, "InvalidSpec", "spec.levels: every level needs a nodeLabel"
        )
    return Topology(name, levels)


def parse_topology_request(
    raw: Mapping[str, Any] | None,
    annotations: Mapping[str, str],
    count: int,
    exclusive: str | None = None,
) -> TopologyRequest | None:
    """The request from ``topologyRequest``, else from the pod template's annotations;
    ``exclusive`` is the Workload's exclusive-topology level, if any."""
    raw = raw or {}
    slice_level = raw.get("podSetSliceRequiredTopology") or annotations.get(
        SLICE_REQUIRED_ANNOTATION
    )
    sub_group = raw.get("subGroupIndexLabel")
    if slice_level:
        size = raw.get("podSetSliceSize") or annotations.get(SLICE_SIZE_ANNOTATION)
        if size is None or int(size) < 1 or count % int(size):
            raise ParseError(f"topologyRequest: podSetSliceSize must divide the count {count}")
        level = str(slice_level)
        return TopologyRequest(level, int(size), False, level == exclusive, sub_group)
    required = raw.get("required") or annotations.get(REQUIRED_ANNOTATION)
    preferred = raw.get("preferred") or annotations.get(PREFERRED_ANNOTATION)
    if required or preferred:
        return TopologyRequest(str(required or preferred), count, not required, False, sub_group)
    if raw.get("unconstrained") or annotations.get(UNCONSTRAINED_ANNOTATION) == "true":
        return TopologyRequest(None, count)
    return None


@dataclass(frozen=True, slots=True)
class TopologyAssignment:
    """Pods per domain: each domain is a tuple of values, one per level."""

    levels: tuple[str, ...]
    domains: tuple[tuple[tuple[str, ...], int], ...]

    def nodes(self) -> Sequence[tuple[str, int]]:
        """Pods per node, when the last level is the node name."""
        if not self.levels or self.levels[-1] != HOSTNAME:
            return ()
        return [(values[-1], count) for values, count in self.domains]

    def to_dict(self) -> dict[str, Any]:
        return {
            "levels": list(self.levels),
            "domains": [{"values": list(v), "count": c} for v, c in self.domains],
        }


def parse_topology_assignment(raw: Mapping[str, Any] | None) -> TopologyAssignment | None:
    if not raw:
        return None
    levels = tuple(str(level) for level in raw.get("levels") or ())
    domains = tuple(
        (tuple(str(v) for v in d.get("values") or ()), int(d.get("count", 0)))
        for d in raw.get("domains") or ()
    )
    return TopologyAssignment(levels, domains)
