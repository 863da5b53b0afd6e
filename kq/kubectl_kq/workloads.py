"""``kubectl kq list workload``: kueuectl's columns, with POSITION IN QUEUE."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kq.kubectl_kq.listing import (
    JOB_TYPE_MAX,
    VISIBILITY,
    exec_time,
    namespaced,
    query,
    status,
    wanted,
)
from kq.kubectl_kq.output import dump
from kq.kubectl_kq.table import age
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import LOCAL_QUEUES, WORKLOADS

Object = dict[str, Any]
HEADERS = (
    "Name",
    "Job Type",
    "Job Name",
    "LocalQueue",
    "ClusterQueue",
    "Status",
    "Position in Queue",
    "Exec Time",
    "Age",
)


class Lookups:
    """What the rows need besides the Workloads, each read once: LocalQueues (for the
    ClusterQueue of a workload without admission), visibility summaries, discovery."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._local_queues: dict[str, Object | None] = {}
        self._summaries: dict[str, list[Object]] = {}
        self._kinds: dict[str, Object | None] = {}

    async def cluster_queue(self, wl: Object) -> str:
        admission = (wl.get("status") or {}).get("admission") or {}
        if admission.get("clusterQueue"):
            return str(admission["clusterQueue"])
        ns, name = wl["metadata"]["namespace"], wl["spec"].get("queueName", "")
        key = f"{ns}/{name}"
        if key not in self._local_queues:
            self._local_queues[key] = await _get_or_none(self._client, LOCAL_QUEUES, name, ns)
        lq = self._local_queues[key]
        return "" if lq is None else str(lq["spec"].get("clusterQueue", ""))

    async def position(self, wl: Object, cq: str) -> str:
        if status(wl) != "pending" or not cq:
            return ""
        if cq not in self._summaries:
            self._summaries[cq] = await self._summary(cq)
        meta = wl["metadata"]
        for item in self._summaries[cq]:
            if (item["metadata"]["name"], item["metadata"]["namespace"]) == (
                meta["name"],
                meta["namespace"],
            ):
                return str(item["positionInLocalQueue"])
        return ""

    async def _summary(self, cq: str) -> list[Object]:
        try:
            found = await self._client.request("GET", VISIBILITY.format(cq))
        except ApiError as exc:
            if not exc.not_found:
                print(f"warning: no queue positions for {cq}: {exc}", file=sys.stderr)
            return []
        items: list[Object] = found.get("items") or []
        return items

    async def job_type(self, ref: Object) -> str:
        """``singular.group`` of an owner's kind, from discovery, as kueuectl abbreviates."""
        api_version = ref.get("apiVersion", "")
        if api_version not in self._kinds:
            path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            try:
                self._kinds[api_version] = await self._client.request("GET", path)
            except ApiError:
                self._kinds[api_version] = None
        listing = self._kinds[api_version] or {}
        for resource in listing.get("resources") or ():
            if resource.get("kind") == ref.get("kind") and resource.get("singularName"):
                group = api_version.rpartition("/")[0]
                name = ".".join(p for p in (resource["singularName"], group) if p)
                return name if len(name) <= JOB_TYPE_MAX else name[:JOB_TYPE_MAX] + "..."
        return ""


async def _get_or_none(client: KubeClient, resource: Any, name: str, ns: str) -> Object | None:
    try:
        return await client.get(resource, name, ns)
    except ApiError as exc:
        if exc.not_found:
            return None
        raise


async def list_workloads(client: KubeClient, args: argparse.Namespace) -> str:
    ns = None if args.all_namespaces else args.namespace
    items = (await client.list(WORKLOADS, namespace=ns, query=query(args)))["items"]
    lookups = Lookups(client)
    now = time.time()
    rows, kept = [], []
    for wl in items:
        if not wanted(wl, args.status or []):
            continue
        cq = await lookups.cluster_queue(wl)
        if args.clusterqueue and cq != args.clusterqueue:
            continue
        if args.localqueue and wl["spec"].get("queueName") != args.localqueue:
            continue
        kept.append(wl)
        if args.output:
            continue
        owners = wl["metadata"].get("ownerReferences") or []
        types = sorted({t for t in [await lookups.job_type(o) for o in owners] if t})
        rows.append(
            (
                wl["metadata"]["namespace"],
                wl["metadata"]["name"],
                ", ".join(types),
                ", ".join(sorted({o.get("name", "") for o in owners})),
                wl["spec"].get("queueName", ""),
                cq,
                status(wl).upper(),
                await lookups.position(wl, cq),
                exec_time(wl, now),
                age(wl["metadata"].get("creationTimestamp"), now),
            )
        )
    if args.output:
        return dump(kept, args.output)
    return namespaced(args, HEADERS, rows)
