"""The storm's faults: a plan drawn from the seed, and the hand that carries each one out.

Faults run one after another (the embedded server holds one fault setting at a time), each
after a seeded gap; how long a fault lasts is part of the fault, so the waits here are the
faults' own durations, never a way of waiting for kq.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import LEASES
from tests.chaos.invariants import clock
from tests.chaos.processes import ApiServer, Election, Replica
from tests.harness import eventually

KINDS = (
    "kill-leader",
    "kill-follower",
    "pause-leader",
    "term-leader",
    "drop-watches",
    "compact",
    "errors",
    "slow",
    "restart-apiserver",
)
ERROR_CODES = (409, 429, 500, 503, 504)
TARGETS = ("", "workloads", "leases", "jobs", "clusterqueues|localqueues")
LEASE_NAME = "c1f6bfd2.kueue.x-k8s.io"


@dataclass(frozen=True)
class Fault:
    kind: str
    gap: float
    """Seconds of calm before it."""
    length: float = 0.0
    """How long it lasts (a storm's length, how long a killed replica stays down)."""
    code: int = 0
    rate: float = 0.0
    match: str = ""
    delay: float = 0.0

    def describe(self) -> str:
        if self.kind == "errors":
            return f"errors {self.code} x{self.rate:.0%} on '{self.match}' for {self.length:.1f}s"
        if self.kind == "slow":
            return f"slow {self.delay:.1f}s on '{self.match}' for {self.length:.1f}s"
        return f"{self.kind} ({self.length:.1f}s)" if self.length else self.kind


def plan(seed: int, duration: float, kinds: tuple[str, ...] = KINDS) -> list[Fault]:
    """Faults planned to last ``duration`` seconds (more once recoveries are waited for); the
    same seed gives the same plan. Every kind appears once before any repeats, and each at
    least once however short the run."""
    r = random.Random(seed)
    faults: list[Fault] = []
    elapsed, order = 0.0, list[str]()
    while elapsed < duration or len(faults) < len(kinds):
        if not order:
            order = list(kinds)
            r.shuffle(order)
        fault = _draw(r, order.pop())
        faults.append(fault)
        elapsed += fault.gap + fault.length
    return faults


def _draw(r: random.Random, kind: str) -> Fault:
    gap = round(r.uniform(0.3, 1.2), 2)
    if kind == "errors":
        return Fault(
            kind,
            gap,
            round(r.uniform(1.0, 3.0), 1),
            code=r.choice(ERROR_CODES),
            rate=round(r.uniform(0.2, 0.6), 2),
            match=r.choice(TARGETS),
        )
    if kind == "slow":
        # 2.5 s on leases outlasts the 2 s renew deadline: the leader must step down.
        match = r.choice(("leases", "workloads", ""))
        delay = 2.5 if match == "leases" else round(r.uniform(0.2, 1.0), 1)
        return Fault(kind, gap, round(r.uniform(1.0, 3.0), 1), match=match, delay=delay)
    if kind in ("kill-leader", "kill-follower", "term-leader"):
        return Fault(kind, gap, round(r.uniform(0.2, 1.5), 1))
    return Fault(kind, gap)


@dataclass
class Cast:
    """Who the faults are done to, and what the storm learns about them."""

    apiserver: ApiServer
    replicas: list[Replica]
    election: Election
    admin: KubeClient
    lease_namespace: str
    injected: Counter[str] = field(default_factory=Counter)
    handovers: list[tuple[str, float]] = field(default_factory=list)
    """(fault, seconds until another replica held the lease)."""
    recoveries: list[tuple[str, float]] = field(default_factory=list)
    """(fault, seconds until the leader renewed its lease again)."""
    resumed_exits: list[float] = field(default_factory=list)
    """Seconds from SIGCONT until a paused, replaced leader exited."""
    log: list[str] = field(default_factory=list)

    async def lease(self) -> dict[str, Any]:
        try:
            spec: dict[str, Any] = (await self.admin.get(LEASES, LEASE_NAME, self.lease_namespace))[
                "spec"
            ]
        except ApiError:
            return {}
        return spec

    async def leader(self) -> tuple[Replica, str] | None:
        """The replica holding the lease once there is one (a previous fault may have left
        none for a while), by the identity its log announced; None if none comes."""
        found: list[tuple[Replica, str]] = []

        async def elected() -> bool:
            leading = await self._leader()
            found[:] = [leading] if leading else []
            return bool(found)

        await self.until(elected, 3 * self.election.handover_bound)
        return found[0] if found else None

    async def _leader(self) -> tuple[Replica, str] | None:
        holder = (await self.lease()).get("holderIdentity") or ""
        for replica in self.replicas:
            if (
                holder
                and replica.alive()
                and holder in replica.log_path.read_text(errors="replace")
            ):
                return replica, holder
        return None

    async def until(self, probe: Callable[[], Awaitable[bool]], within: float) -> float | None:
        """Seconds until ``probe`` holds (polled every 50 ms), or None after ``within``: a
        recovery that never comes is a figure (and a violation), not an error here."""
        started = time.monotonic()
        try:
            await eventually(probe, "a recovery", within=within, interval=0.05)
        except AssertionError:
            return None
        return time.monotonic() - started

    async def new_holder(self, old: str) -> bool:
        holder = (await self.lease()).get("holderIdentity") or ""
        return bool(holder) and holder != old

    async def renewed_after(self, mark: str) -> bool:
        spec = await self.lease()
        return bool(spec.get("holderIdentity")) and str(spec.get("renewTime", "")) > mark

    async def internal(self, method: str, path: str, body: dict[str, Any] | None = None) -> None:
        await self.admin.request(method, path, body=body)


async def carry_out(cast: Cast, fault: Fault) -> None:
    """Do one fault, and wait for the recovery it calls for (a new leader, a renewed lease)."""
    cast.log.append(f"{clock()} {fault.describe()}")
    action = _ACTIONS[fault.kind]
    if await action(cast, fault) is not False:
        cast.injected[fault.kind] += 1


async def _kill(cast: Cast, fault: Fault) -> bool:
    found = await cast.leader()
    if found is None:
        return False
    replica, identity = found
    replica.held_down = True  # before the signal: its exit is the fault's, not a crash
    if fault.kind == "term-leader":
        await replica.terminate()
    else:
        replica.kill()
    await asyncio.sleep(fault.length)  # the replica stays down this long (the fault itself)
    replica.held_down = False
    took = await cast.until(lambda: cast.new_holder(identity), 4 * cast.election.handover_bound)
    cast.handovers.append((fault.kind, -1.0 if took is None else took + fault.length))
    return True


async def _kill_follower(cast: Cast, fault: Fault) -> bool:
    found = await cast.leader()
    followers = [r for r in cast.replicas if r.alive() and (found is None or r is not found[0])]
    if not followers:
        return False
    followers[0].held_down = True
    followers[0].kill()
    await asyncio.sleep(fault.length)  # the fault's length: how long the follower stays dead
    followers[0].held_down = False
    return True


async def _pause(cast: Cast, fault: Fault) -> bool:
    """SIGSTOP the leader until another replica holds the lease, then SIGCONT it: it must step
    down (exit 1, "leadership lost") instead of acting on what it saw before the pause."""
    found = await cast.leader()
    if found is None:
        return False
    replica, identity = found
    replica.signal(signal.SIGSTOP)
    took = await cast.until(lambda: cast.new_holder(identity), 4 * cast.election.handover_bound)
    cast.handovers.append((fault.kind, -1.0 if took is None else took))
    process = replica.process
    replica.signal(signal.SIGCONT)
    if process is not None:
        exited = await cast.until(lambda: _exited(process.poll()), 10.0)
        cast.resumed_exits.append(-1.0 if exited is None else exited)
    return True


async def _exited(code: int | None) -> bool:
    return code is not None


async def _watches(cast: Cast, fault: Fault) -> bool:
    if fault.kind == "compact":
        # Resuming a watch past the compacted history gets 410 Gone: only a relist recovers.
        await cast.internal("POST", "/kq/compact")
    await cast.internal("POST", "/kq/drop-watches")
    return True


async def _storm(cast: Cast, fault: Fault) -> bool:
    settings: dict[str, Any] = {"match": fault.match}
    if fault.kind == "errors":
        settings.update(errorRate=fault.rate, errorCode=fault.code)
    else:
        settings.update(delay=fault.delay)
    await cast.internal("PUT", "/kq/faults", settings)
    try:
        await asyncio.sleep(fault.length)  # the storm's length
    finally:
        await cast.internal("PUT", "/kq/faults", {})
    return True


async def _restart_apiserver(cast: Cast, fault: Fault) -> bool:
    mark = str((await cast.lease()).get("renewTime", ""))
    cast.apiserver.kill()
    await asyncio.to_thread(cast.apiserver.start)
    took = await cast.until(lambda: cast.renewed_after(mark), 4 * cast.election.handover_bound)
    cast.recoveries.append((fault.kind, -1.0 if took is None else took))
    return True


_ACTIONS: dict[str, Callable[[Cast, Fault], Awaitable[bool]]] = {
    "kill-leader": _kill,
    "term-leader": _kill,
    "kill-follower": _kill_follower,
    "pause-leader": _pause,
    "drop-watches": _watches,
    "compact": _watches,
    "errors": _storm,
    "slow": _storm,
    "restart-apiserver": _restart_apiserver,
}
