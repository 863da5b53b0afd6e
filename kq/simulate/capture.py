"""``--from-cluster``: the queueing objects of a live cluster, read with LIST calls only.

Each kind is listed page by page (GET, nothing else is sent). A kind the cluster does not
serve (no Cohort, Topology or Budget CRD) is noted and skipped. Nodes come along only when a
ResourceFlavor names a Topology: that is the only time a simulation places pods on nodes.
kq's Budgets come along as specs: a simulation starts their windows empty and counts what the
trace runs (the Workloads ``--trace-from-cluster`` replays), never a live ledger besides.
What is kept of each object is what its parser reads: no status, no server-set metadata.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import (
    ADMISSION_CHECKS,
    BUDGETS,
    CLUSTER_QUEUES,
    COHORTS,
    LOCAL_QUEUES,
    NAMESPACES,
    NODES,
    PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    TOPOLOGIES,
    WORKLOAD_PRIORITY_CLASSES,
    Resource,
)

Obj = dict[str, Any]
PAGE = 500
QUEUEING_KINDS = (
    RESOURCE_FLAVORS, COHORTS, CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOAD_PRIORITY_CLASSES,
    PRIORITY_CLASSES, ADMISSION_CHECKS, TOPOLOGIES, NAMESPACES, BUDGETS,
)  # fmt: skip
KEPT_METADATA = ("name", "namespace", "labels", "annotations")
KEPT_TOP = ("spec", "value", "globalDefault", "description", "preemptionPolicy")


@dataclass
class Captured:
    """The objects read, in the order listed, the kinds the cluster did not serve, and the
    LocalQueues left out because their ClusterQueue does not exist (Kueue keeps them
    inactive; nothing of theirs could be admitted)."""

    objects: list[Obj] = field(default_factory=list)
    unserved: list[str] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)


async def list_all(client: KubeClient, resource: Resource) -> AsyncIterator[Obj]:
    """Every object of ``resource``, across namespaces, page by page."""
    token = ""
    while True:
        query = [("limit", str(PAGE))] + ([("continue", token)] if token else [])
        page = await client.list(resource, query=query)
        for item in page.get("items") or ():
            yield item
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            return


def trimmed(resource: Resource, obj: Obj) -> Obj:
    """What a setup file would hold: apiVersion, kind, identity, labels and the spec."""
    meta = obj.get("metadata") or {}
    out: Obj = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {k: meta[k] for k in KEPT_METADATA if meta.get(k)},
    }
    out.update({k: obj[k] for k in KEPT_TOP if k in obj})
    if resource is NODES:
        # Placement reads allocatable, taints and readiness; the rest of status is noise.
        status = obj.get("status") or {}
        out["status"] = {
            "allocatable": status.get("allocatable") or status.get("capacity") or {},
            "conditions": [c for c in status.get("conditions") or () if c.get("type") == "Ready"],
        }
    return out


async def _kind(client: KubeClient, resource: Resource, captured: Captured) -> list[Obj]:
    try:
        found = [trimmed(resource, item) async for item in list_all(client, resource)]
    except ApiError as exc:
        if not exc.not_found:
            raise
        captured.unserved.append(resource.kind)
        return []
    captured.objects.extend(found)
    return found


async def capture(client: KubeClient) -> Captured:
    captured = Captured()
    flavors: list[Obj] = []
    for resource in QUEUEING_KINDS:
        found = await _kind(client, resource, captured)
        if resource is RESOURCE_FLAVORS:
            flavors = found
    if any((f.get("spec") or {}).get("topologyName") for f in flavors):
        await _kind(client, NODES, captured)
    _drop_dangling(captured)
    return captured


def _drop_dangling(captured: Captured) -> None:
    queues = {o["metadata"]["name"] for o in captured.objects if o.get("kind") == "ClusterQueue"}
    kept = []
    for obj in captured.objects:
        target = (obj.get("spec") or {}).get("clusterQueue")
        if obj.get("kind") == "LocalQueue" and target not in queues:
            meta = obj["metadata"]
            captured.dangling.append(f"{meta.get('namespace')}/{meta['name']} (-> {target})")
            continue
        kept.append(obj)
    captured.objects = kept
