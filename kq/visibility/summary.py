"""PendingWorkloadsSummary documents, computed from a ClusterQueue's pending queue.

Positions are the order in which the scheduler would look at the workloads: the sticky
preemptor (a head waiting for its victims to go) first, then the heap order (priority, queue
time, UID). Parked workloads keep their place, as upstream counts its inadmissible ones too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kq.queue.cluster_queue import PendingQueue
from kq.workload.info import WorkloadInfo

GROUP = "visibility.kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")
"""Served versions, the preferred one first (upstream prefers v1beta2)."""
DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000
"""Upstream bounds ``limit`` to this many items whatever the caller asks."""

Object = dict[str, Any]
RawLookup = Callable[[str], Object | None]
"""The stored Workload of a ``namespace/name`` key, for what the parsed one does not keep."""


class BadRequest(ValueError):
    """A query parameter that is not an integer."""


@dataclass(frozen=True)
class Page:
    limit: int = DEFAULT_LIMIT
    offset: int = 0


def parse_page(query: Mapping[str, str]) -> Page:
    """``limit`` and ``offset`` as upstream reads them: 0 or absent means the default limit,
    negatives count as 0, and no page is longer than ``MAX_LIMIT``."""
    limit = _integer(query, "limit") or DEFAULT_LIMIT
    offset = _integer(query, "offset")
    return Page(min(max(limit, 0), MAX_LIMIT), max(offset, 0))


def _integer(query: Mapping[str, str], name: str) -> int:
    text = query.get(name, "")
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        raise BadRequest(f'{name}: Invalid value: "{text}": must be an integer') from None


def in_order(queue: PendingQueue) -> list[WorkloadInfo]:
    pending = queue.pending()
    sticky = [info for info in pending if info.key == queue.sticky]
    return sticky + [info for info in pending if info.key != queue.sticky]


def cluster_queue_items(pending: list[WorkloadInfo], page: Page, raw: RawLookup) -> list[Object]:
    """The page of a ClusterQueue's pending workloads; each also says where it stands in its
    LocalQueue, which counts every workload ahead of it, on this page or not."""
    seen: dict[tuple[str, str], int] = {}
    items = []
    for index, info in enumerate(pending[: page.offset + page.limit]):
        local_queue = (info.obj.namespace, info.obj.queue_name)
        in_local_queue = seen.get(local_queue, 0)
        seen[local_queue] = in_local_queue + 1
        if index >= page.offset:
            items.append(pending_workload(info, index, in_local_queue, raw))
    return items


def local_queue_items(
    pending: list[WorkloadInfo], namespace: str, name: str, page: Page, raw: RawLookup
) -> list[Object]:
    """The page of one LocalQueue's workloads, with their places in the whole ClusterQueue."""
    mine = [
        (index, info)
        for index, info in enumerate(pending)
        if info.obj.namespace == namespace and info.obj.queue_name == name
    ]
    window = mine[page.offset : page.offset + page.limit]
    return [
        pending_workload(info, index, page.offset + n, raw)
        for n, (index, info) in enumerate(window)
    ]


def pending_workload(
    info: WorkloadInfo, in_cluster_queue: int, in_local_queue: int, raw: RawLookup
) -> Object:
    workload = info.obj
    stored = raw(workload.key) or {}
    meta = stored.get("metadata") or {}
    metadata: Object = {
        "name": workload.name,
        "namespace": workload.namespace,
        "creationTimestamp": meta.get("creationTimestamp"),
    }
    owners = [
        {k: ref[k] for k in ("apiVersion", "kind", "name", "uid") if k in ref}
        for ref in meta.get("ownerReferences") or ()
    ]
    if owners:
        metadata["ownerReferences"] = owners
    return {
        "metadata": metadata,
        "priority": workload.priority,
        "localQueueName": workload.queue_name,
        "positionInClusterQueue": in_cluster_queue,
        "positionInLocalQueue": in_local_queue,
    }


def summary(version: str, items: list[Object]) -> Object:
    return {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": f"{GROUP}/{version}",
        "metadata": {"creationTimestamp": None},
        "items": items,
    }
