"""Leader election on a coordination.k8s.io/v1 Lease, on monotonic time.

Candidates judge expiry by how long *they* have watched the same lease record stay unchanged,
never by comparing the holder's clock with their own. The leader gives up the moment it has not
renewed for ``renew_deadline``, which is shorter than the ``lease_duration`` others wait, so two
leaders never overlap; on loss the caller's leader-only work is cancelled at once and
``LeadershipLost`` propagates so the process exits, as controller-runtime's manager does.

Cancelling comes only when the renew loop wakes, though, and a paused process (a frozen VM,
SIGSTOP) resumes with writes in hand that were decided while it led. ``leading`` is the gate
leader-only writers ask right before each write: true only while the last renewal was sent
less than ``renew_deadline`` ago, so a leader resumed after that writes nothing.
"""

from __future__ import annotations

import asyncio
import math
import random
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import structlog

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.events import rfc3339_micro
from kq.runtime.resources import LEASES

log = structlog.get_logger("kq.runtime.leader")


class LeadershipLost(Exception):
    """The lease was not renewed within the renew deadline; leader-only work was stopped."""


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class ElectionSettings:
    name: str = "c1f6bfd2.kueue.x-k8s.io"
    namespace: str = "kueue-system"
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
    """Campaigns for the lease, runs the leader's work while renewing, releases on exit."""

    def __init__(self, client: KubeClient, settings: ElectionSettings) -> None:
        self._client = client
        self.settings = settings
        self._observed: dict[str, Any] | None = None  # last lease object seen
        self._observed_at = 0.0  # monotonic time its record last changed
        # When the last successful acquire or renewal was sent: the server wrote it later, so
        # others start waiting out the lease no earlier than this.
        self._renewed_at = -math.inf
        self.is_leader = False
        self._log = log.bind(lease=settings.name, identity=settings.identity)

    def leading(self) -> bool:
        """Whether leader-only work may write now: this replica holds the lease and renewed it
        less than ``renew_deadline`` ago (client-go's leader stops at that deadline)."""
        elapsed = time.monotonic() - self._renewed_at
        return self.is_leader and elapsed < self.settings.renew_deadline

    async def run(self, leading: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Block until elected, then run ``leading`` until cancelled or leadership is lost."""
        await self._acquire()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(leading())
                group.create_task(self._renew_until_lost())
        except BaseExceptionGroup as group_error:
            lost = group_error.subgroup(LeadershipLost)
            if lost is not None:
                raise lost.exceptions[0] from None
            raise
        finally:
            if self.is_leader:
                await self._release()

    async def _acquire(self) -> None:
        while True:
            if await self._attempt():
                break
            # Jitter, as client-go does, so candidates restarted together do not move in step.
            await asyncio.sleep(self.settings.retry_period * (1 + 0.2 * random.random()))
        self._log.info("became leader")

    async def _renew_until_lost(self) -> None:
        deadline = self.settings.renew_deadline
        while True:
            await asyncio.sleep(self.settings.retry_period)
            remaining = self._renewed_at + deadline - time.monotonic()
            if remaining > 0:
                try:
                    async with asyncio.timeout(remaining):
                        await self._attempt()
                except TimeoutError:
                    pass
            if time.monotonic() - self._renewed_at >= deadline:
                self.is_leader = False
                self._log.error("leadership lost: lease not renewed within the renew deadline")
                raise LeadershipLost(self.settings.name)

    async def _attempt(self) -> bool:
        """One acquire-or-renew round trip; False when someone else holds a live lease."""
        sent = time.monotonic()
        try:
            ok = await self._try_acquire_or_renew()
        except ApiError as exc:
            if not exc.conflict:
                self._log.warning("lease update failed", error=str(exc))
            return False
        if ok:
            self._renewed_at = sent
        return ok

    async def _try_acquire_or_renew(self) -> bool:
        s = self.settings
        now = rfc3339_micro()
        try:
            lease = await self._client.get(LEASES, s.name, s.namespace)
        except ApiError as exc:
            if not exc.not_found:
                raise
            created = await self._client.create(LEASES, self._new_lease(now))
            self._observe(created)
            self.is_leader = True
            return True
        self._observe(lease)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        if holder and holder != s.identity and not self._expired(spec):
            self.is_leader = False
            return False
        if holder != s.identity:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
        spec["holderIdentity"] = s.identity
        spec["leaseDurationSeconds"] = int(s.lease_duration)
        spec["renewTime"] = now
        lease["spec"] = spec
        # PUT carries the resourceVersion we read: a concurrent writer makes this a 409.
        updated = await self._client.replace(LEASES, lease)
        self._observe(updated)
        self.is_leader = True
        return True

    async def _release(self) -> None:
        """Hand the lease back so a successor need not wait out the lease duration."""
        lease = self._observed
        self.is_leader = False
        if lease is None:
            return
        # As client-go: the release may take up to the renew deadline, since a lost release
        # costs the successor a whole lease duration.
        try:
            async with asyncio.timeout(self.settings.renew_deadline):
                await self._release_from(lease)
        except (ApiError, TimeoutError) as exc:
            self._log.warning("lease not released", error=str(exc))

    async def _release_from(self, lease: dict[str, Any]) -> None:
        s = self.settings
        while True:
            spec = dict(lease.get("spec") or {})
            spec.update(holderIdentity=None, leaseDurationSeconds=1, renewTime=rfc3339_micro())
            try:
                await self._client.replace(LEASES, {**lease, "spec": spec})
                self._log.info("lease released")
                return
            except ApiError as exc:
                if not exc.conflict:
                    raise
            # A renewal cancelled in flight may still have landed: read the lease again, and
            # release it if it is still ours.
            lease = await self._client.get(LEASES, s.name, s.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") != s.identity:
                return

    def _new_lease(self, now: str) -> dict[str, Any]:
        s = self.settings
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": s.name, "namespace": s.namespace},
            "spec": {
                "holderIdentity": s.identity,
                "leaseDurationSeconds": int(s.lease_duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }

    def _observe(self, lease: dict[str, Any]) -> None:
        old = (self._observed or {}).get("spec")
        if old != lease.get("spec"):
            self._observed_at = time.monotonic()
        self._observed = lease

    def _expired(self, spec: dict[str, Any]) -> bool:
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        return time.monotonic() > self._observed_at + duration
