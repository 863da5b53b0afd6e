"""Embedded API server throughput: creates/s, patches/s, the server's CPU per write and watch
event latency.

Starts ``kq apiserver`` as a subprocess on a fresh data directory (SQLite on disk), opens N
watches on the benchmark namespace's ConfigMaps, then creates and merge-patches ConfigMaps
over HTTP with a fixed concurrency. Latency is measured from sending the write to each
watcher receiving its event. ``--floor`` then sends the same patches to a server that does
nothing but read them and answer over the same TLS (``floor_server.py``): the part of the
cost per request that is aiohttp's, TLS's and Python's, under any API server written so.

    .venv/bin/python benchmarks/apiserver.py [--objects 1000] [--watchers 10] [--concurrency 16]
        [--floor]
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
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
from servers import cpu_seconds

TOKEN = secrets.token_urlsafe(32)
HERE = Path(__file__).parent


def start_server(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, text=True)
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
    count: int, concurrency: int, write: Callable[[int], Awaitable[None]], pid: int
) -> tuple[float, float]:
    """Writes per second, and the server's CPU ms per write."""
    queue = iter(range(count))

    async def worker() -> None:
        for i in queue:
            await write(i)

    cpu = cpu_seconds([pid])
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    rate = count / (time.perf_counter() - started)
    return rate, (cpu_seconds([pid]) - cpu) * 1e3 / count


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def patcher(
    session: aiohttp.ClientSession, collection: str, sent: dict[str, float]
) -> Callable[[int], Awaitable[None]]:
    async def patch(i: int) -> None:
        name = f"cm-{i}"
        sent[name] = time.perf_counter()
        async with session.patch(
            f"{collection}/{name}",
            data=json.dumps({"data": {"patched": str(i)}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ) as response:
            assert response.status == 200, await response.text()

    return patch


async def benchmark(
    base: str, ca: Path, objects: int, watchers: int, concurrency: int, pid: int
) -> None:
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

        creates, create_cpu = await run_writes(objects, concurrency, create, pid)
        await asyncio.sleep(0.5)
        creates_lat = list(create_lat)
        create_lat.clear()

        patch = patcher(session, collection, sent)
        patches, patch_cpu = await run_writes(objects, concurrency, patch, pid)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        both = creates_lat + create_lat
        idle = await probe(session, collection, watchers, sent)
        print(f"objects={objects} watchers={watchers} concurrency={concurrency}")
        print(f"creates/s            {creates:10.0f}  ({create_cpu:.3f} ms server CPU each)")
        print(f"patches/s            {patches:10.0f}  ({patch_cpu:.3f} ms server CPU each)")
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


async def floor(base: str, ca: Path, objects: int, concurrency: int, pid: int) -> None:
    context = ssl.create_default_context(cafile=str(ca))
    connector = aiohttp.TCPConnector(limit=concurrency + 4, ssl=context)
    async with aiohttp.ClientSession(connector=connector) as session:
        patch = patcher(session, f"{base}/api/v1/namespaces/bench/configmaps", {})
        rate, cpu = await run_writes(objects, concurrency, patch, pid)
    print(f"floor patches/s      {rate:10.0f}  ({cpu:.3f} ms server CPU each; a do-nothing "
          "aiohttp server, same TLS)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--floor", action="store_true", help="also measure the do-nothing floor")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kq = ["-m", "kq", "apiserver", "--data-dir", tmp, "--no-builtin-crds", "--token", TOKEN]
        ca = Path(tmp) / "tls.crt"
        with serving(kq) as (pid, base):
            asyncio.run(benchmark(base, ca, args.objects, args.watchers, args.concurrency, pid))
        if args.floor:
            with serving([str(HERE / "floor_server.py"), str(ca), str(ca.with_suffix(".key"))]
                         ) as (pid, base):  # fmt: skip
                asyncio.run(floor(base, ca, args.objects, args.concurrency, pid))


@contextmanager
def serving(argv: list[str]) -> Iterator[tuple[int, str]]:
    process, base = start_server(argv)
    try:
        yield process.pid, base
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
