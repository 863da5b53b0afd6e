"""The visibility API through the API server: positions in queue order, pages, errors.

``kq run`` serves ``visibility.kueue.x-k8s.io``; its APIServices send the API server's
requests for that group to it (an ExternalName Service to loopback: the embedded server's
aggregation and kube-apiserver's, with its front proxy certificate). Every read goes through
the API server, as ``kubectl get --raw`` and ``kubectl kq`` read it.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import WORKLOADS
from kq.visibility.summary import GROUP
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    eventually,
    finish,
    flavor,
    local_queue,
    suffix,
    workload,
)
from tests.harness import Cluster
from tests.visibility.fixtures import PORTS, Object, pending_in, positions, serving

pytestmark = pytest.mark.slow

# name, priority, LocalQueue; created in this order, each asking for the whole quota.
PENDING = (
    ("low", 1, "lq-a"),
    ("high", 10, "lq-b"),
    ("mid", 5, "lq-a"),
    ("mid2", 5, "lq-b"),
    ("top", 20, "lq-a"),
)


def setup(ns: str, strategy: str) -> tuple[str, list[dict[str, Any]]]:
    cq = f"cq-{ns}"
    objects = [
        flavor(f"f-{ns}"),
        cluster_queue(cq, f"f-{ns}", "cpu", 1, queueingStrategy=strategy),
        local_queue(ns, "lq-a", cq),
        local_queue(ns, "lq-b", cq),
    ]
    return cq, objects


def expected(stored: list[Object]) -> list[tuple[str, int, int]]:
    """Upstream's queue order: priority first, then creation time; the UID breaks ties."""
    order = sorted(
        stored,
        key=lambda w: (
            -w["spec"]["priority"],
            w["metadata"]["creationTimestamp"],
            w["metadata"]["uid"],
        ),
    )
    seen: dict[str, int] = {}
    out = []
    for index, w in enumerate(order):
        lq = w["spec"]["queueName"]
        out.append((w["metadata"]["name"], index, seen.get(lq, 0)))
        seen[lq] = seen.get(lq, 0) + 1
    return out


async def stored(client: KubeClient, ns: str, names: list[str]) -> list[Object]:
    return [await client.get(WORKLOADS, n, ns) for n in names]


async def cq_positions(client: KubeClient, cq: str, **query: str) -> list[tuple[str, int, int]]:
    items = await pending_in(client, "clusterqueues", cq, query=query)
    assert isinstance(items, list)
    return positions(items)


@pytest.mark.parametrize("strategy", ["StrictFIFO", "BestEffortFIFO"])
async def test_positions_follow_queue_order(
    cluster: Cluster, tmp_path: Path, strategy: str
) -> None:
    ns = f"vis-{suffix()}"
    cache = tmp_path / "cache"
    async with serving(cluster, tmp_path, ns) as client:
        cq, objects = setup(ns, strategy)
        apply(cluster, cache, *objects)
        apply(cluster, cache, workload(ns, "holder", "lq-a", {"cpu": 1}, priority=0))
        await eventually(lambda: admitted(client, ns, "holder"), "the holder admitted")
        for name, priority, lq in PENDING:
            apply(cluster, cache, workload(ns, name, lq, {"cpu": 1}, priority=priority))
        want = expected(await stored(client, ns, [n for n, _, _ in PENDING]))
        assert [w[0] for w in want][:2] == ["top", "high"]

        async def matches() -> bool:
            return await cq_positions(client, cq) == want

        await eventually(matches, f"positions {want}")
        items = await pending_in(client, "clusterqueues", cq, version="v1beta2")
        assert isinstance(items, list)
        assert positions(items) == want
        top = items[0]
        assert top["priority"] == 20
        assert top["localQueueName"] == "lq-a"
        assert top["metadata"]["namespace"] == ns
        assert top["metadata"]["creationTimestamp"]

        # The holder finishes: the first in line is admitted and everyone moves up.
        await finish(client, ns, "holder")
        await eventually(lambda: admitted(client, ns, "top"), "top admitted")
        rest = expected(await stored(client, ns, [n for n, _, _ in PENDING if n != "top"]))
        assert rest[0][:2] == ("high", 0)

        async def moved_up() -> bool:
            return await cq_positions(client, cq) == rest

        await eventually(moved_up, f"positions {rest}")


async def test_local_queue_pages_and_errors(cluster: Cluster, tmp_path: Path) -> None:
    ns = f"vis-{suffix()}"
    cache = tmp_path / "cache"
    async with serving(cluster, tmp_path, ns) as client:
        cq, objects = setup(ns, "StrictFIFO")
        apply(cluster, cache, *objects)
        apply(cluster, cache, workload(ns, "holder", "lq-a", {"cpu": 1}, priority=0))
        await eventually(lambda: admitted(client, ns, "holder"), "the holder admitted")
        for name, priority, lq in PENDING:
            apply(cluster, cache, workload(ns, name, lq, {"cpu": 1}, priority=priority))
        want = expected(await stored(client, ns, [n for n, _, _ in PENDING]))

        async def all_there() -> bool:
            return await cq_positions(client, cq) == want

        await eventually(all_there, f"positions {want}")

        # A page of the ClusterQueue keeps each item's places in the whole order.
        assert await cq_positions(client, cq, limit="2", offset="1") == want[1:3]
        assert await cq_positions(client, cq, offset="9") == []
        assert await cq_positions(client, cq, limit="0") == want  # 0 is the default, 1000

        # A LocalQueue lists its own, in order, with both positions.
        lq_a = [w for w in want if dict((n, q) for n, _, q in PENDING).get(w[0]) == "lq-a"]
        items = await pending_in(client, "localqueues", "lq-a", namespace=ns)
        assert isinstance(items, list)
        assert positions(items) == lq_a
        assert [i["localQueueName"] for i in items] == ["lq-a"] * len(lq_a)
        paged = await pending_in(
            client, "localqueues", "lq-a", namespace=ns, query={"offset": "1", "limit": "1"}
        )
        assert isinstance(paged, list)
        assert positions(paged) == lq_a[1:2]

        # Upstream's errors.
        with pytest.raises(ApiError) as missing:
            await pending_in(client, "clusterqueues", f"no-{ns}")
        assert missing.value.status == 404
        assert f'clusterqueue.{GROUP} "no-{ns}" not found' in str(missing.value)
        with pytest.raises(ApiError) as missing_lq:
            await pending_in(client, "localqueues", "nope", namespace=ns)
        assert missing_lq.value.status == 404
        assert f'localqueue.{GROUP} "nope" not found' in str(missing_lq.value)
        with pytest.raises(ApiError) as bad:
            await pending_in(client, "clusterqueues", cq, query={"limit": "many"})
        assert bad.value.status == 400

        # kubectl reaches the same handler, and discovery lists the group.
        raw = cluster.kubectl(
            "get", "--raw", f"/apis/{GROUP}/v1beta1/clusterqueues/{cq}/pendingworkloads",
            cache_dir=cache,
        )  # fmt: skip
        assert raw.returncode == 0, raw.stderr
        assert f'"name":"{want[0][0]}"' in raw.stdout
        versions = cluster.kubectl("api-versions", cache_dir=cache)
        assert f"{GROUP}/v1beta1" in versions.stdout.split()
        assert f"{GROUP}/v1beta2" in versions.stdout.split()


async def test_only_the_front_proxy_may_call_kq_directly(cluster: Cluster, tmp_path: Path) -> None:
    """On kube-apiserver, kq trusts the front proxy's certificate alone: a direct caller,
    even one naming a user in the headers, is refused."""
    if cluster.backend != "real":
        pytest.skip("the embedded API server has no front proxy; kq dev serves on loopback")
    ns = f"vis-{suffix()}"
    async with serving(cluster, tmp_path, ns):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{PORTS[ns]}/apis/{GROUP}/v1beta1/clusterqueues/x/pendingworkloads"
        request = urllib.request.Request(url, headers={"X-Remote-User": "system:admin"})

        async def answer() -> urllib.error.HTTPError | None:
            """kq run's own answer; None while it is not listening yet (the APIService is
            cluster-wide, so the API server may have reached an earlier test's kq run)."""
            try:
                await asyncio.to_thread(urllib.request.urlopen, request, context=context,
                                        timeout=10)  # fmt: skip
            except urllib.error.HTTPError as exc:
                return exc
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, ConnectionRefusedError):
                    return None
                raise
            raise AssertionError("a direct caller was let in")

        refused = await eventually(answer, "kq run's visibility server to answer directly")
        assert refused.code == 401
