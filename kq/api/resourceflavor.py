"""ResourceFlavor: the node labels, taints and tolerations a flavor stands for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kq.api.invalid import Invalid, ParseError
from kq.api.selectors import Taint, Toleration, parse_taints, parse_tolerations


@dataclass(frozen=True, slots=True)
class ResourceFlavor:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology_name: str | None = None


def parse_resource_flavor(obj: Mapping[str, Any]) -> ResourceFlavor | Invalid:
    name = str(obj.get("metadata", {}).get("name", ""))
    spec = obj.get("spec") or {}
    try:
        labels = {str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()}
        return ResourceFlavor(
            name=name,
            node_labels=labels,
            node_taints=parse_taints(spec.get("nodeTaints")),
            tolerations=parse_tolerations(spec.get("tolerations")),
            topology_name=spec.get("topologyName"),
        )
    except (KeyError, TypeError, ParseError) as error:
        return Invalid("ResourceFlavor", name, "InvalidSpec", f"invalid spec: {error}")
