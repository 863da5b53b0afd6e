"""What topology-aware admission needs of a Node: labels, allocatable, taints and health."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kq.api.invalid import Invalid, ParseError
from kq.api.quantity import QuantityError, to_amount
from kq.api.selectors import Taint, parse_taints

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]
    """In Kueue units (cpu in millicores), as pod requests are."""
    taints: tuple[Taint, ...] = ()
    ready: bool = True
    unschedulable: bool = False

    @property
    def failed(self) -> bool:
        """Its kubelet is gone or not ready: the pods on it are lost (hot-swap's trigger)."""
        return not self.ready or any(
            t.key in (NOT_READY_TAINT, UNREACHABLE_TAINT) and t.effect == "NoExecute"
            for t in self.taints
        )

    @property
    def usable(self) -> bool:
        """New pods may be placed on it (taints the pods tolerate are checked per pod set)."""
        return not self.failed and not self.unschedulable

    def health(self) -> str:
        if self.failed:
            return "NotReady"
        return "Unschedulable" if self.unschedulable else "Ready"


def parse_node(obj: Mapping[str, Any]) -> Node | Invalid:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    try:
        allocatable = status.get("allocatable") or status.get("capacity") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        return Node(
            name=name,
            labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
            allocatable={str(r): to_amount(str(r), v) for r, v in allocatable.items()},
            taints=parse_taints(spec.get("taints")),
            ready=ready,
            unschedulable=bool(spec.get("unschedulable")),
        )
    except (KeyError, TypeError, ValueError, QuantityError, ParseError) as error:
        return Invalid("Node", name, "InvalidSpec", f"invalid node: {error}")
