"""The informer against scripted wire behaviour: relists, broken streams, throttling."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from kq.runtime.informer import Informer, InformerSettings
from kq.runtime.resources import WORKLOADS
from kq.runtime.store import Change, EventType
from tests.harness import eventually
from tests.runtime.stub import Route, event, gone, listing, obj, scripted, serve, stream

FAST = InformerSettings(inactivity_timeout=5.0, reconnect_delay=0.01, backoff_initial=0.01)
Log = list[tuple[str, str, str]]


def reply(response: Callable[[], web.StreamResponse]) -> Route:
    async def route(_: web.Request) -> web.StreamResponse:
        return response()

    return route


def chunks(*parts: bytes, hold: bool = False) -> Route:
    async def route(request: web.Request) -> web.StreamResponse:
        return await stream(request, *parts, hold=hold)

    return route


@asynccontextmanager
async def running(
    lists: list[Route], watches: list[Route], settings: InformerSettings = FAST
) -> AsyncIterator[tuple[Informer, Log, Any]]:
    async with serve(scripted(lists, watches)) as (stub, client):
        informer = Informer(client, WORKLOADS, settings=settings)
        seen: Log = []

        def record(change: Change) -> None:
            meta = change.obj["metadata"]
            seen.append((change.type.value, meta["name"], meta["resourceVersion"]))

        informer.add_handler(record)
        task = asyncio.create_task(informer.run())
        try:
            yield informer, seen, stub
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def until(condition: Callable[[], bool], limit: float = 5.0) -> None:
    """Wait for ``condition``, polling: that keeps the stub free of test hooks."""

    async def check() -> bool:
        return condition()

    await eventually(check, repr(condition), within=limit, interval=0.01)


def versions(informer: Informer) -> dict[str, str]:
    return {
        o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.store.values()
    }


async def test_paginated_list_then_watch_from_the_list_version() -> None:
    lists = [
        reply(lambda: listing("9", obj("a", "1"), cont="page2")),
        reply(lambda: listing("10", obj("b", "2"))),
    ]
    watches = [chunks(event("ADDED", obj("c", "11")), event("DELETED", obj("a", "12")), hold=True)]
    async with running(lists, watches) as (informer, seen, stub):
        await until(lambda: len(seen) == 4)
        assert informer.has_synced
        assert stub.lists()[0]["limit"] == "500"
        assert stub.lists()[1]["continue"] == "page2"
        watch = stub.watches()[0]
        assert watch["resourceVersion"] == "10"
        assert watch["allowWatchBookmarks"] == "true"
        assert 300 <= int(watch["timeoutSeconds"]) <= 600
        assert versions(informer) == {"b": "2", "c": "11"}
        # The deletion carries the last known object, not the bare tombstone from the wire.
        assert seen[-1] == ("DELETED", "a", "1")
        assert [o["kind"] for o in informer.store.values()] == ["Workload", "Workload"]


async def test_410_relists_and_emits_only_the_difference() -> None:
    lists = [
        reply(lambda: listing("10", obj("a", "1"), obj("b", "2"), obj("c", "3"))),
        reply(lambda: listing("20", obj("a", "11"), obj("b", "15"), obj("d", "16"))),
    ]
    watches = [chunks(event("MODIFIED", obj("a", "11")), gone())]
    async with running(lists, watches) as (informer, seen, stub):
        await until(lambda: len(stub.watches()) == 2)
        assert seen == [
            ("ADDED", "a", "1"),
            ("ADDED", "b", "2"),
            ("ADDED", "c", "3"),
            ("MODIFIED", "a", "11"),
            # Relist diff: a is unchanged (no phantom), b changed, d is new, c vanished.
            ("MODIFIED", "b", "15"),
            ("ADDED", "d", "16"),
            ("DELETED", "c", "3"),
        ]
        assert versions(informer) == {"a": "11", "b": "15", "d": "16"}
        assert "resourceVersion" not in stub.lists()[1]
        assert stub.watches()[1]["resourceVersion"] == "20"


async def test_http_410_on_watch_start_relists() -> None:
    lists = [reply(lambda: listing("5", obj("a", "1"))), reply(lambda: listing("7"))]
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    watches = [reply(lambda: web.json_response(status, status=410))]
    async with running(lists, watches) as (_, seen, stub):
        await until(lambda: len(stub.watches()) == 2)
        assert seen == [("ADDED", "a", "1"), ("DELETED", "a", "1")]
        assert stub.watches()[1]["resourceVersion"] == "7"


async def test_html_502_is_a_transport_error_then_resumes_from_the_last_version() -> None:
    html = b"<html><body>502 Bad Gateway</body></html>\n"
    lists = [reply(lambda: listing("5", obj("a", "1")))]
    watches = [
        reply(lambda: web.Response(status=502, body=html, content_type="text/html")),
        chunks(event("MODIFIED", obj("a", "6")), html),
        chunks(event("MODIFIED", obj("a", "7")), hold=True),
    ]
    async with running(lists, watches) as (_, seen, stub):
        await until(lambda: bool(seen) and seen[-1] == ("MODIFIED", "a", "7"))
        assert [w["resourceVersion"] for w in stub.watches()] == ["5", "5", "6"]
        assert len(stub.lists()) == 1  # a broken transport is no reason to relist


async def test_dropped_stream_and_bookmarks_resume_without_relisting() -> None:
    bookmark = {"metadata": {"resourceVersion": "30"}}
    lists = [reply(lambda: listing("5"))]
    watches = [
        chunks(event("ADDED", obj("a", "6")), b'{"type": "MODIF'),  # cut mid-line
        chunks(event("BOOKMARK", bookmark)),  # server ends the stream normally
        chunks(event("ADDED", obj("b", "31")), hold=True),
    ]
    async with running(lists, watches) as (_, seen, stub):
        await until(lambda: len(seen) == 2)
        assert [w["resourceVersion"] for w in stub.watches()] == ["5", "6", "30"]
        assert seen == [("ADDED", "a", "6"), ("ADDED", "b", "31")]
        assert len(stub.lists()) == 1


async def test_connection_reset_mid_stream_resumes() -> None:
    async def reset(request: web.Request) -> web.StreamResponse:
        response = await stream(request, event("ADDED", obj("a", "6")), b'{"type": "MOD')
        assert request.transport is not None
        request.transport.abort()  # no terminating chunk: the client sees a payload error
        return response

    lists = [reply(lambda: listing("5"))]
    watches = [reset, chunks(event("ADDED", obj("b", "7")), hold=True)]
    async with running(lists, watches) as (_, seen, stub):
        await until(lambda: len(seen) == 2)
        assert [w["resourceVersion"] for w in stub.watches()] == ["5", "6"]
        assert seen == [("ADDED", "a", "6"), ("ADDED", "b", "7")]


async def test_429_retry_after_is_honoured() -> None:
    throttled = {"kind": "Status", "code": 429, "reason": "TooManyRequests", "message": "slow"}

    def too_many() -> web.Response:
        return web.json_response(throttled, status=429, headers={"Retry-After": "1"})

    lists = [reply(too_many), reply(lambda: listing("5", obj("a", "1")))]
    async with running(lists, []) as (informer, seen, stub):
        started = time.monotonic()
        await until(lambda: informer.has_synced)
        # The client retries the 429 itself, after at least the server's Retry-After.
        assert time.monotonic() - started >= 0.95
        assert len(stub.lists()) == 2
        assert seen == [("ADDED", "a", "1")]


async def test_silent_stream_trips_the_watchdog() -> None:
    quiet = InformerSettings(inactivity_timeout=0.2, reconnect_delay=0.01, backoff_initial=0.01)
    lists = [reply(lambda: listing("5"))]
    watches = [chunks(hold=True), chunks(event("ADDED", obj("a", "6")), hold=True)]
    async with running(lists, watches, quiet) as (_, seen, stub):
        await until(lambda: seen == [("ADDED", "a", "6")])
        assert [w["resourceVersion"] for w in stub.watches()] == ["5", "5"]


async def test_late_handler_sees_the_cache_and_a_failing_handler_is_contained() -> None:
    go = asyncio.Event()

    async def gated(request: web.Request) -> web.StreamResponse:
        await go.wait()
        return await stream(request, event("ADDED", obj("b", "6")), hold=True)

    lists = [reply(lambda: listing("5", obj("a", "1")))]
    async with running(lists, [gated]) as (informer, seen, _):
        await until(lambda: informer.has_synced)
        late: list[tuple[EventType, str]] = []

        def broken(change: Change) -> None:
            raise RuntimeError("handler bug")

        informer.add_handler(broken)
        informer.add_handler(lambda c: late.append((c.type, c.obj["metadata"]["name"])))
        go.set()
        await until(lambda: len(late) == 2)
        assert late == [(EventType.ADDED, "a"), (EventType.ADDED, "b")]
        assert seen == [("ADDED", "a", "1"), ("ADDED", "b", "6")]


async def test_an_event_beyond_aiohttps_line_buffer_is_read_whole() -> None:
    # Over 2 MiB, aiohttp's own line reader raised LineTooLong (no ClientError): the informer
    # task died, and with it every replica of kq run at once.
    huge = event("ADDED", obj("huge", "6", data="x" * (5 * 1024 * 1024)))
    lists = [reply(lambda: listing("5"))]
    watches = [chunks(huge[:1000], huge[1000:], event("ADDED", obj("after", "7")), hold=True)]
    async with running(lists, watches) as (informer, seen, stub):
        await until(lambda: len(seen) == 2)
        assert seen == [("ADDED", "huge", "6"), ("ADDED", "after", "7")]
        stored = informer.store.get("ns/huge")
        assert stored is not None
        assert len(stored["data"]) == 5 * 1024 * 1024
        assert len(stub.watches()) == 1  # no reconnect: the stream was never broken


def owned(name: str, rv: str) -> dict[str, Any]:
    """An object as kube-apiserver serves it: with who wrote which field."""
    item = obj(name, rv)
    item["metadata"]["managedFields"] = [{"manager": "kq", "operation": "Update"}]
    return item


async def test_the_cache_keeps_no_field_ownership() -> None:
    lists = [reply(lambda: listing("9", owned("a", "1")))]
    watches = [chunks(event("MODIFIED", owned("a", "10")), hold=True)]
    async with running(lists, watches) as (informer, seen, _):
        await until(lambda: len(seen) == 2)
        assert [o["metadata"] for o in informer.store.values()] == [obj("a", "10")["metadata"]]
