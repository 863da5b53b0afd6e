"""Client-side QPS/burst limiting: a token bucket, as client-go's flowcontrol does."""

from __future__ import annotations

import asyncio
import time


class TokenBucket:
    """``qps`` tokens a second, at most ``burst`` saved; ``acquire`` waits for one."""

    def __init__(self, qps: float, burst: int) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be positive and burst at least 1")
        self._qps = qps
        self._burst = float(burst)
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()
        self._queued = 0

    async def acquire(self) -> None:
        # Nobody queued and a token saved: take it without the lock's bookkeeping.
        if not self._queued:
            self._refill()
            if self._tokens >= 1:
                self._tokens -= 1
                return
        # The lock keeps waiters in FIFO order, so a burst of callers is paced, not stampeded.
        self._queued += 1
        try:
            async with self._lock:
                self._refill()
                if self._tokens < 1:
                    await asyncio.sleep((1 - self._tokens) / self._qps)
                    self._tokens = 1.0
                    self._stamp = time.monotonic()
                self._tokens -= 1
        finally:
            self._queued -= 1

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._qps)
        self._stamp = now
