"""Nodes and Topologies for topology-aware admission in a simulation.

Nodes are listed as ``v1`` Node objects (as ``kubectl get nodes -o yaml`` prints them, or
captured with ``--from-cluster``) or generated from a ``NodePool`` (``simulate.kq.dev/v1alpha1``,
a simulator-only kind): ``slices`` groups of ``nodes`` identical nodes, each group labelled
with its own value of ``sliceLabel`` (a GKE node pool: a TPU slice). The cache gets them as
``kq run``'s topology feed gives them, so placement is the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kq.api.invalid import Invalid
from kq.api.node import Node, parse_node
from kq.api.resourceflavor import ResourceFlavor
from kq.api.topology import HOSTNAME, Topology, parse_topology
from kq.simulate.source import InputError

NODE_POOL_API = "simulate.kq.dev/v1alpha1"
SLICE_LABEL = "cloud.google.com/gke-nodepool"
POOL_KEYS = frozenset({"nodes", "slices", "sliceLabel", "labels", "allocatable", "taints"})
MAX_POOL_NODES = 100_000
"""A safety net against a typo generating millions of nodes."""


def topology(origin: str, obj: Mapping[str, Any]) -> Topology:
    parsed = parse_topology(obj)
    if isinstance(parsed, Invalid):
        raise InputError(f"{origin}: Topology {parsed.name}: {parsed.message}")
    return parsed


def node(origin: str, obj: Mapping[str, Any]) -> Node:
    """A listed Node; one written by hand without conditions counts as Ready."""
    status = obj.get("status") or {}
    if not status.get("conditions"):
        status = {**status, "conditions": [{"type": "Ready", "status": "True"}]}
    parsed = parse_node({**obj, "status": status})
    if isinstance(parsed, Invalid):
        raise InputError(f"{origin}: Node {parsed.name}: {parsed.message}")
    if not parsed.allocatable:
        raise InputError(f"{origin}: Node {parsed.name}: status.allocatable: Required")
    return parsed


def _count(origin: str, spec: Mapping[str, Any], key: str, default: int | None) -> int:
    value = spec.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"{origin}: NodePool spec.{key}: must be an integer >= 1, not {value!r}")
    return value


def pool_nodes(origin: str, obj: Mapping[str, Any]) -> list[Node]:
    """The nodes a ``NodePool`` stands for, named ``POOL-SLICE-INDEX`` (``POOL-INDEX`` when it
    has one slice), each labelled with its hostname and its slice."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise InputError(f"{origin}: NodePool {name}: spec: Required value")
    unknown = sorted(set(spec) - POOL_KEYS)
    if unknown:
        known = ", ".join(sorted(POOL_KEYS))
        raise InputError(f"{origin}: NodePool {name}: spec.{unknown[0]}: unknown field ({known})")
    per_slice, slices = _count(origin, spec, "nodes", None), _count(origin, spec, "slices", 1)
    if per_slice * slices > MAX_POOL_NODES:
        raise InputError(f"{origin}: NodePool {name}: more than {MAX_POOL_NODES} nodes")
    if not isinstance(spec.get("allocatable"), dict) or not spec["allocatable"]:
        raise InputError(f"{origin}: NodePool {name}: spec.allocatable: Required mapping")
    label = str(spec.get("sliceLabel") or SLICE_LABEL)
    out = []
    for s in range(slices):
        slice_name = name if slices == 1 else f"{name}-{s}"
        for i in range(per_slice):
            node_name = f"{slice_name}-{i}"
            labels = {**(spec.get("labels") or {}), label: slice_name, HOSTNAME: node_name}
            meta = {"name": node_name, "labels": labels}
            status = {"allocatable": spec["allocatable"]}
            out.append(node(origin, {"metadata": meta, "spec": {"taints": spec.get("taints") or []},
                                     "status": status}))  # fmt: skip
    return out


def check_topologies(
    flavors: Mapping[str, ResourceFlavor], topologies: Mapping[str, Topology], nodes: int
) -> None:
    """A flavor naming a Topology needs it, and nodes: without them it could never admit."""
    for flavor in flavors.values():
        name = flavor.topology_name
        if name is None:
            continue
        if name not in topologies:
            raise InputError(
                f"ResourceFlavor {flavor.name}: spec.topologyName: Topology {name} is not in "
                "the setup"
            )
        if nodes == 0:
            raise InputError(
                f"ResourceFlavor {flavor.name} has Topology {name}, but the setup has no nodes: "
                f"list Node objects or a NodePool ({NODE_POOL_API})"
            )
