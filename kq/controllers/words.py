"""Pending words that only change their message are written at most once a second.

Kueue requeues a root cohort's inadmissible workloads in batches at most once per
``requeueBatchPeriod`` (1 s, pkg/cache/queue/inadmissible_workloads.go), so a waiting head's
words ("3 more needed", "2 more needed") change at most about once a second. kq retries parked
heads on every quota release, which admits sooner, but writing each new count would cost a
status write per release that tells nobody anything new. A new status or reason is news and
is not paced.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from itertools import takewhile

# Kueue's requeueBatchPeriod: the observable cadence of a waiting workload's words.
WORDS_MIN_INTERVAL_S = 1.0
# The workload controller's words (no LocalQueue, inactive ClusterQueue): Kueue writes them
# on reconcile, outside the requeue batches.
INADMISSIBLE = "Inadmissible"

Rewant = Callable[[str, str, str], None]


class WordsPacer:
    """When each workload's words were last written, and the newest words deferred."""

    def __init__(
        self,
        rewant: Rewant,
        interval: float = WORDS_MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``rewant(key, reason, message)`` asks for deferred words again once they may go."""
        self._rewant = rewant
        self._interval = interval
        self._clock = clock
        # Oldest first, so times that defer nothing any more leave from the front.
        self._written: dict[str, float] = {}
        self._deferred: dict[str, tuple[str, str]] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}

    def defer(self, key: str, reason: str, message: str) -> bool:
        """Whether to keep words that only change the message until the interval since the
        last words written ends; the newest kept are wanted again then."""
        last = self._written.get(key)
        wait = 0.0 if last is None else last + self._interval - self._clock()
        if wait <= 0 or reason == INADMISSIBLE:
            return False
        self._deferred[key] = (reason, message)
        if key not in self._timers:
            self._timers[key] = asyncio.create_task(self._release(key, wait))
        return True

    def written(self, key: str) -> None:
        """Words are being written now: the next message change waits an interval."""
        now = self._clock()
        self._written.pop(key, None)
        self._written[key] = now
        horizon = now - self._interval
        for old in list(takewhile(lambda k: self._written[k] <= horizon, self._written)):
            del self._written[old]

    def drop(self, key: str) -> None:
        """Deferred words no longer apply: newer ones are wanted, or an admission or eviction
        is on its way."""
        self._deferred.pop(key, None)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def forget(self, key: str) -> None:
        """The workload is gone."""
        self.drop(key)
        self._written.pop(key, None)

    def timers(self) -> set[asyncio.Task[None]]:
        """One per workload with words deferred; each ends by wanting them again."""
        return set(self._timers.values())

    async def close(self) -> None:
        """Deferred words are abandoned with the other writes."""
        timers = list(self._timers.values())
        for timer in timers:
            timer.cancel()
        await asyncio.gather(*timers, return_exceptions=True)
        self._timers.clear()
        self._deferred.clear()
        self._written.clear()

    async def _release(self, key: str, wait: float) -> None:
        await asyncio.sleep(wait)
        del self._timers[key]
        reason, message = self._deferred.pop(key)
        self._rewant(key, reason, message)
