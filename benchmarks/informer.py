"""Informer throughput and memory against a local stub API server.

Prints events/s from a watch stream through the informer's store into a handler (the handler
only counts), and the memory the store holds per 10k cached Workload-sized objects. The stub
serves a LIST of ``--objects`` items, then one watch stream of ``--events`` MODIFIED events.

    .venv/bin/python benchmarks/informer.py [--objects 10000] [--events 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import tracemalloc
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client as k8s_client

from kq.runtime.client import ClientSettings, KubeClient
from kq.runtime.informer import Informer
from kq.runtime.resources import WORKLOADS
from kq.runtime.store import Change


def workload(i: int, rv: int) -> dict[str, Any]:
    """About the size of a pending Workload with one pod set (~1.3 kB of JSON)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": f"job-train-{i:06d}-abcde",
            "namespace": f"team-{i % 20}",
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(rv),
            "generation": 1,
            "creationTimestamp": "2026-11-21T10:00:00Z",
            "labels": {"kueue.x-k8s.io/job-uid": f"{i:012d}"},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": f"train-{i}", "uid": f"j{i}"}
            ],
        },
        "spec": {
            "queueName": "user-queue",
            "priority": 0,
            "active": True,
            "podSets": [
                {
                    "name": "main",
                    "count": 4,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "trainer",
                                    "image": "us-docker.pkg.dev/project/images/trainer:v1",
                                    "resources": {
                                        "requests": {"cpu": "8", "memory": "32Gi"},
                                        "limits": {"google.com/tpu": "4"},
                                    },
                                }
                            ],
                            "nodeSelector": {"cloud.google.com/gke-tpu-topology": "2x2x1"},
                        }
                    },
                }
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": "couldn't assign flavors to pod set main: insufficient quota",
                    "lastTransitionTime": "2026-11-21T10:00:01Z",
                }
            ]
        },
    }


async def start_stub(objects: int, events: int) -> tuple[web.AppRunner, str]:
    listing = json.dumps(
        {
            "metadata": {"resourceVersion": str(objects)},
            "items": [workload(i, i) for i in range(objects)],
        }
    ).encode()
    stream = b"".join(
        json.dumps(
            {"type": "MODIFIED", "object": workload(n % max(objects, 1), objects + n + 1)}
        ).encode()
        + b"\n"
        for n in range(events)
    )
    watched = asyncio.Event()

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            return web.Response(body=listing, content_type="application/json")
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        if not watched.is_set():
            watched.set()
            await response.write(stream)
        await asyncio.Event().wait()
        return response

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


async def measure(objects: int, events: int, trace_memory: bool) -> tuple[float, float, float]:
    runner, url = await start_stub(objects, events if not trace_memory else 0)
    client = KubeClient(k8s_client.ApiClient(k8s_client.Configuration(host=url)), ClientSettings())
    informer = Informer(client, WORKLOADS)
    seen = 0
    done = asyncio.Event()

    def count(change: Change) -> None:
        nonlocal seen
        seen += 1
        if seen == objects + events:
            done.set()

    informer.add_handler(count)
    if trace_memory:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    synced = time.perf_counter()
    memory = (tracemalloc.get_traced_memory()[0] - before) if trace_memory else 0
    if trace_memory:
        tracemalloc.stop()
    else:
        await done.wait()
    finished = time.perf_counter()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await client.close()
    await runner.cleanup()
    return synced - started, finished - synced, memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=50_000)
    args = parser.parse_args()
    list_s, watch_s, _ = asyncio.run(measure(args.objects, args.events, trace_memory=False))
    _, _, memory = asyncio.run(measure(args.objects, 0, trace_memory=True))
    size = len(json.dumps(workload(0, 0)))
    print(f"objects: {args.objects} (~{size} B of JSON each), watch events: {args.events}")
    print(f"initial LIST into the store: {list_s:.2f} s ({args.objects / list_s:,.0f} objects/s)")
    print(f"watch events through the store into a handler: {args.events / watch_s:,.0f} events/s")
    print(f"store memory: {memory / 2**20 * 10_000 / args.objects:.1f} MiB per 10k objects")


if __name__ == "__main__":
    main()
