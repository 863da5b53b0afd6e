"""Leader election against an in-memory Lease endpoint: takeover, release, fencing."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from kq.runtime.leader import ElectionSettings, LeaderElector, LeadershipLost
from tests.harness import eventually
from tests.runtime.stub import serve

FAST = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


class LeaseServer:
    """One Lease with optimistic concurrency; ``broken`` makes every request fail with 500."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.broken = False
        self.reads = 0
        self.writes = 0
        # (method, holder the client saw or wrote) per answered request, in order.
        self.log: list[tuple[str, str | None]] = []
        self.reply_delay = 0.0  # how long a write that succeeded waits for its answer

    async def route(self, request: web.Request) -> web.StreamResponse:
        if self.broken:
            return web.json_response({"kind": "Status", "code": 500, "message": "down"}, status=500)
        if request.method == "GET":
            self.reads += 1
            if self.lease is None:
                return web.json_response({"kind": "Status", "code": 404}, status=404)
            self.log.append(("GET", self.holder))
            return web.json_response(self.lease)
        self.writes += 1
        body = json.loads(await request.read())
        sent = body["metadata"].get("resourceVersion")
        if (request.method == "POST") != (self.lease is None) or (
            self.lease is not None and sent != self.lease["metadata"]["resourceVersion"]
        ):
            return web.json_response({"kind": "Status", "code": 409}, status=409)
        self.version += 1
        body["metadata"]["resourceVersion"] = str(self.version)
        self.lease = body
        self.log.append((request.method, self.holder))
        await asyncio.sleep(self.reply_delay)
        return web.json_response(body, status=201 if request.method == "POST" else 200)

    @property
    def holder(self) -> str | None:
        return None if self.lease is None else self.lease["spec"].get("holderIdentity")


def held_by(server: LeaseServer, identity: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return server.holder == identity

    return check


def settings(identity: str) -> ElectionSettings:
    return ElectionSettings(name="lease", namespace="ns", identity=identity, **FAST)


async def test_one_leader_then_release_hands_over_at_once() -> None:
    server = LeaseServer()
    async with serve(server.route) as (_, client):
        led: list[str] = []
        b_elected = asyncio.Event()

        def work(name: str) -> Any:
            async def leading() -> None:
                led.append(name)
                if name == "b":
                    b_elected.set()
                await asyncio.Event().wait()

            return leading

        first = asyncio.create_task(LeaderElector(client, settings("a")).run(work("a")))
        await eventually(held_by(server, "a"), "a holding the lease")
        reads, writes = server.reads, server.writes
        second = asyncio.create_task(LeaderElector(client, settings("b")).run(work("b")))

        async def b_tried_three_times() -> bool:
            # Every attempt reads the Lease; only a's renewals write it after the read (one
            # extra read counted while a renewal's write is in flight).
            return (server.reads - reads) - (server.writes - writes) >= 4

        # Absence is the point: b, retrying every 0.2 s, must not take a held lease.
        await eventually(b_tried_three_times, "three attempts by b", interval=0.02)
        assert led == ["a"]
        assert server.holder == "a"
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        await asyncio.wait_for(b_elected.wait(), 2)
        assert led == ["a", "b"]
        # Released, so b need not wait out the 1.5 s lease: the first read that shows the lease
        # released is followed by b's write (a wait would show as more reads of a free lease).
        released = server.log.index(("PUT", None))
        assert server.log[released + 1 :] == [("GET", None), ("PUT", "b")]
        assert server.lease is not None
        spec = server.lease["spec"]
        assert spec["holderIdentity"] == "b"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", spec["renewTime"])
        second.cancel()
        await asyncio.gather(second, return_exceptions=True)


async def test_a_renewal_cancelled_in_flight_does_not_keep_the_lease() -> None:
    server = LeaseServer()
    async with serve(server.route) as (_, client):

        async def idle() -> None:
            await asyncio.Event().wait()

        leader = asyncio.create_task(LeaderElector(client, settings("a")).run(idle))
        await eventually(held_by(server, "a"), "a holding the lease")
        server.reply_delay = 0.3
        applied = len(server.log)

        async def renewal_applied() -> bool:
            return ("PUT", "a") in server.log[applied:]

        await eventually(renewal_applied, "a renewal applied, its answer held back", interval=0.01)
        leader.cancel()
        await asyncio.gather(leader, return_exceptions=True)
        # The release sent the resourceVersion a had seen before that renewal: refused (409),
        # it reads the lease, finds it still a's and releases it.
        assert server.log[-2:] == [("GET", "a"), ("PUT", None)]
        assert server.holder is None


async def test_a_dead_leader_is_replaced_after_the_lease_duration() -> None:
    server = LeaseServer()
    async with serve(server.route) as (_, client):
        server.lease = {
            "metadata": {"name": "lease", "namespace": "ns", "resourceVersion": "0"},
            "spec": {"holderIdentity": "gone", "leaseDurationSeconds": 1, "leaseTransitions": 3},
        }
        started = time.monotonic()
        elected = asyncio.Event()

        async def leading() -> None:
            elected.set()
            await asyncio.Event().wait()

        task = asyncio.create_task(LeaderElector(client, settings("b")).run(leading))
        await asyncio.wait_for(elected.wait(), 3)
        assert time.monotonic() - started >= 1.0
        assert server.lease["spec"]["leaseTransitions"] == 4
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_failed_renewals_fence_the_leader_within_the_renew_deadline() -> None:
    server = LeaseServer()
    async with serve(server.route, max_attempts=1) as (_, client):
        stopped_at: list[float] = []

        elected = asyncio.Event()

        async def leading() -> None:
            elected.set()
            try:
                await asyncio.Event().wait()
            finally:
                stopped_at.append(time.monotonic())

        task = asyncio.create_task(LeaderElector(client, settings("a")).run(leading))
        await asyncio.wait_for(elected.wait(), 5)
        broken_at = time.monotonic()
        server.broken = True
        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(task, 3)
        # Fenced before anyone else could take over (lease_duration after the last renewal).
        assert len(stopped_at) == 1
        assert stopped_at[0] - broken_at < FAST["lease_duration"]


async def test_a_leader_paused_past_the_renew_deadline_may_not_write_on_resume() -> None:
    """The gate leader-only writers ask closes at the renew deadline by the clock, before the
    renew loop (asleep for its retry period) notices, as for a process frozen and resumed."""
    server = LeaseServer()
    async with serve(server.route) as (_, client):
        elector = LeaderElector(client, settings("a"))
        elected = asyncio.Event()

        async def leading() -> None:
            elected.set()
            await asyncio.Event().wait()

        task = asyncio.create_task(elector.run(leading))
        await asyncio.wait_for(elected.wait(), 5)
        assert elector.leading()
        # Not a wait for anything: this blocks the event loop on purpose, as SIGSTOP freezes
        # the whole process, so no renewal (and no renew loop) runs meanwhile.
        time.sleep(FAST["renew_deadline"])  # noqa: ASYNC251
        assert not elector.leading()
        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(task, 3)
        assert not elector.leading()
