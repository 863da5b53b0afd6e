"""Sandbox time: one accelerated clock for the whole simulated cluster, and a manual one for tests.

At speed 60 a pod that sleeps 60 s finishes after one second of wall time. The clock is built on
the monotonic clock so a wall-clock jump never makes sandbox time go backwards. Sandbox time runs
ahead of wall time, so what reaches the API is mapped back to the wall time at which sandbox time
read that value (``to_wall``; ``apitime`` does that for every object the driver writes).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


def rfc3339(moment: datetime) -> str:
    """A timestamp the way Kubernetes writes ``metav1.Time``: second precision, ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


class SandboxClock:
    """Real time scaled by ``speed`` from a fixed origin."""

    def __init__(
        self,
        speed: float = 1.0,
        *,
        origin: datetime | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.speed = speed
        self.wall = wall
        self._wall_start = wall()
        self._origin = origin or self._wall_start
        self._monotonic = monotonic
        self._start = monotonic()

    def now(self) -> datetime:
        elapsed = (self._monotonic() - self._start) * self.speed
        return self._origin + timedelta(seconds=elapsed)

    def to_wall(self, moment: datetime) -> datetime:
        """The wall time at which sandbox time reads (or read) ``moment``."""
        return self._wall_start + (moment - self._origin) / self.speed

    def from_wall(self, moment: datetime) -> datetime:
        """The sandbox time at wall time ``moment``: the inverse of :meth:`to_wall`."""
        return self._origin + (moment - self._wall_start) * self.speed

    def wall_seconds(self, sandbox_seconds: float) -> float:
        """How long to really wait for ``sandbox_seconds`` to pass."""
        return sandbox_seconds / self.speed


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock never goes backwards")
        self._now += timedelta(seconds=seconds)
