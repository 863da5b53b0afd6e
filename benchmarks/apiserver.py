"""Embedded API server throughput: creates/s, patches/s and watch event latency.

Starts ``kq apiserver`` as a subprocess on a fresh data directory (SQLite on disk), opens N
watches on the benchmark namespace's ConfigMaps, then creates and merge-patches ConfigMaps
over HTTP with a fixed concurrency. Latency is measured from sending the write to each
watcher receiving its event.

    .venv/bin/python benchmarks/apiserver.py [--objects 1000] [--watchers 10] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

TOKEN = secrets.token_urlsafe(32)


def start_server(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "kq", "apiserver", "--data-dir", str(data_dir),
         "--no-builtin-crds", "--token", TOKEN],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    if "ready" not in line:
        process.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return process, line.split(" at ")[1].split()[0]


async def watcher(
    session: aiohttp.ClientSession,
    url: str,
    sent: dict[str, float],
    latencies: list[float],
    expected: int,
    ready: asyncio.Event,
) -> None:
    params = {"watch": "true", "resourceVersion": "0", "timeoutSeconds": "600"}
    seen = 0
    async with session.get(url, params=params) as response:
        ready.set()
        async for line in response.content:
            event = json.loads(line)
            name = event["object"]["metadata"]["name"]
            now = time.perf_counter()
            if name in sent:
                latencies.append(now - sent[name])
            seen += 1
            if seen >= expected:
                return


async def run_writes(
    count: int, concurrency: int, write: Callable[[int], Awaitable[None]]
) -> float:
    queue = iter(range(count))

    async def worker() -> None:
        for i in queue:
            await write(i)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / (time.perf_counter() - started)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def benchmark(base: str, ca: Path, objects: int, watchers: int, concurrency: int) -> None:
    context = ssl.create_default_context(cafile=str(ca))  # the server's self-signed cert
    connector = aiohttp.TCPConnector(limit=concurrency + watchers + 4, ssl=context)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(connector=connector, headers=auth) as session:
        ns = "bench"
        await session.post(f"{base}/api/v1/namespaces", json={"metadata": {"name": ns}})
        collection = f"{base}/api/v1/namespaces/{ns}/configmaps"
        sent: dict[str, float] = {}
        create_lat: list[float] = []
        ready = [asyncio.Event() for _ in range(watchers)]
        tasks = [
            asyncio.create_task(watcher(session, collection, sent, create_lat, objects * 2, r))
            for r in ready
        ]
        await asyncio.gather(*(r.wait() for r in ready))

        async def create(i: int) -> None:
            name = f"cm-{i}"
            sent[name] = time.perf_counter()
            body = {"metadata": {"name": name, "labels": {"bench": "yes"}}, "data": {"i": str(i)}}
            async with session.post(collection, json=body) as response:
                assert response.status == 201, await response.text()

        creates = await run_writes(objects, concurrency, create)
        await asyncio.sleep(0.5)
        creates_lat = list(create_lat)
        create_lat.clear()

        async def patch(i: int) -> None:
            name = f"cm-{i}"
            sent[name] = time.perf_counter()
            async with session.patch(
                f"{collection}/{name}",
                data=json.dumps({"data": {"patched": str(i)}}),
                headers={"Content-Type": "application/merge-patch+json"},
            ) as response:
                assert response.status == 200, await response.text()

        patches = await run_writes(objects, concurrency, patch)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        both = creates_lat + create_lat
        idle = await probe(session, collection, watchers, sent)
        print(f"objects={objects} watchers={watchers} concurrency={concurrency}")
        print(f"creates/s            {creates:10.0f}")
        print(f"patches/s            {patches:10.0f}")
        print(f"events delivered     {len(both):10d}")
        print(f"watch latency p50    {statistics.median(both) * 1000:10.1f} ms")
        print(f"watch latency p99    {percentile(both, 0.99) * 1000:10.1f} ms  (under write load)")
        print(f"idle latency p50     {statistics.median(idle) * 1000:10.1f} ms")
        print(
            f"idle latency p99     {percentile(idle, 0.99) * 1000:10.1f} ms  (one write at a time)"
        )


async def probe(
    session: aiohttp.ClientSession, collection: str, watchers: int, sent: dict[str, float]
) -> list[float]:
    """Latency of single writes with the watchers otherwise idle."""
    latencies: list[float] = []
    probes = 100
    ready = [asyncio.Event() for _ in range(watchers)]
    url = f"{collection}?labelSelector=probe%3Dyes"
    tasks = [asyncio.create_task(watcher(session, url, sent, latencies, probes, r)) for r in ready]
    await asyncio.gather(*(r.wait() for r in ready))
    for i in range(probes):
        name = f"probe-{i}"
        sent[name] = time.perf_counter()
        body = {"metadata": {"name": name, "labels": {"probe": "yes"}}}
        async with session.post(collection, json=body) as response:
            assert response.status == 201
        await asyncio.sleep(0.01)
    await asyncio.wait_for(asyncio.gather(*tasks), 30)
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        process, base = start_server(Path(tmp))
        try:
            ca = Path(tmp) / "tls.crt"
            asyncio.run(benchmark(base, ca, args.objects, args.watchers, args.concurrency))
        finally:
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
