"""Reading what the page shows, as a client would: LISTs of the queue objects, Workloads and
Events, and the visibility API (pending positions, explanations) through the API server.

A read that fails becomes a sentence on the page, not an error page: a dashboard that shows
what it can is more use than none (a follower replica, say, cannot explain).
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import quote

from kq.dashboard.model import (
    PENDING_SHOWN,
    Explanation,
    Lists,
    Pending,
    View,
    build_view,
    pending_items,
)
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import (
    CLUSTER_QUEUES,
    COHORTS,
    EVENTS,
    LOCAL_QUEUES,
    WORKLOADS,
    Resource,
)
from kq.visibility.summary import GROUP

VISIBILITY = f"/apis/{GROUP}/v1beta1"
READ_TIMEOUT_S = 5.0
"""Per read: the client retries 503s and 5xx, and a page must not hang on them."""
FRESH_S = 1.0
"""How long one read serves every page that asks (the pages poll every 3 s)."""


class Reader:
    """What every request reads, shared: one read at a time, reused for ``FRESH_S``, so
    several open pages cost the API server one set of reads."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._lock = asyncio.Lock()
        self._last: tuple[float, Lists, dict[str, list[Pending]]] | None = None

    async def view(self, selected: str | None = None) -> View:
        """Everything on the page; ``selected`` (``namespace/name``) also gets its
        explanation, read afresh."""
        async with self._lock:
            if self._last is None or time.monotonic() - self._last[0] > FRESH_S:
                self._last = (time.monotonic(), *await _read(self._client))
            _, lists, pending = self._last
        view = build_view(lists, pending, time.time())
        if selected:
            view.explanation = await explanation(self._client, selected)
        return view


async def _read(client: KubeClient) -> tuple[Lists, dict[str, list[Pending]]]:
    lists = await read_lists(client)
    names = [str((cq.get("metadata") or {}).get("name", "")) for cq in lists.cluster_queues]
    answers = await asyncio.gather(*(_pending(client, name) for name in names))
    pending: dict[str, list[Pending]] = {}
    for name, answer in zip(names, answers, strict=True):
        if isinstance(answer, str):
            lists.problems.append(answer)
        else:
            pending[name] = answer
    return lists, pending


async def read_lists(client: KubeClient) -> Lists:
    kinds = (COHORTS, CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS, EVENTS)
    answers = await asyncio.gather(*(_items(client, kind) for kind in kinds))
    lists = Lists()
    for kind, answer in zip(kinds, answers, strict=True):
        if isinstance(answer, str):
            lists.problems.append(answer)
            continue
        setattr(lists, _FIELDS[kind.plural], answer)
    return lists


_FIELDS = {
    "cohorts": "cohorts",
    "clusterqueues": "cluster_queues",
    "localqueues": "local_queues",
    "workloads": "workloads",
    "events": "events",
}


async def _items(client: KubeClient, resource: Resource) -> list[dict[str, object]] | str:
    # Only Workloads' Events make the timeline; the server filters the rest out.
    query = (("fieldSelector", "involvedObject.kind=Workload"),) if resource is EVENTS else ()
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            answer = await client.list(resource, query=query)
    except ApiError as exc:
        return f"cannot list {resource.plural}: {exc}"
    except TimeoutError:
        return f"cannot list {resource.plural}: no answer within {READ_TIMEOUT_S:g} s"
    return list(answer.get("items") or ())


async def _pending(client: KubeClient, cluster_queue: str) -> list[Pending] | str:
    path = f"{VISIBILITY}/clusterqueues/{quote(cluster_queue, safe='')}/pendingworkloads"
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            answer = await client.request("GET", path, query=(("limit", str(PENDING_SHOWN)),))
    except ApiError as exc:
        return f"no pending positions for ClusterQueue {cluster_queue}: {exc}"
    except TimeoutError:
        return f"no pending positions for ClusterQueue {cluster_queue}: no answer in time"
    return pending_items(answer)


async def explanation(client: KubeClient, key: str) -> Explanation:
    """kq's explanation of ``namespace/name`` (what ``kubectl kq explain workload`` prints)."""
    namespace, _, name = key.partition("/")
    if not namespace or not name:
        return Explanation(key, "", [], "a workload is named namespace/name")
    path = f"{VISIBILITY}/namespaces/{quote(namespace, safe='')}/workloads/"
    path += f"{quote(name, safe='')}/explanation"
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            answer = await client.request("GET", path)
    except ApiError as exc:
        return Explanation(key, "", [], f"no explanation: {exc}")
    except TimeoutError:
        return Explanation(key, "", [], "no explanation: no answer in time")
    lines = [str(line) for line in answer.get("lines") or ()]
    return Explanation(key, str(answer.get("state", "")), lines)
