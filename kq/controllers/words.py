"""Pending words are written once a wait has lasted a second, and after that a change of
message at most once a second.

Kueue requeues a root cohort's inadmissible workloads in batches at most once per
``requeueBatchPeriod`` (1 s, pkg/cache/queue/inadmissible_workloads.go), so a waiting head's
words ("3 more needed", "2 more needed") change at most about once a second, and a head it
explains waits about that long before its next try. kq retries parked heads on every quota
release, which admits sooner: on Kueue's baseline mix most heads it would explain are
admitted within half a second of their first words. Words for such a wait, or each new count,
would cost a status write and an Event that tell nobody anything new. A new status or reason
within a wait already explained is news and is not paced; neither are the words of a
workload that no LocalQueue or active ClusterQueue can take.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from itertools import takewhile

# Kueue's requeueBatchPeriod: the observable cadence of a waiting workload's words.
WORDS_MIN_INTERVAL_S = 1.0
# How long a wait lasts before its first words are written: one requeue batch, as in Kueue.
FIRST_WORDS_AFTER_S = WORDS_MIN_INTERVAL_S
# The workload controller's words (no LocalQueue, inactive ClusterQueue): Kueue writes them
# on reconcile, outside the requeue batches.
INADMISSIBLE = "Inadmissible"

Rewant = Callable[[str, str, str], None]


class WordsPacer:
    """When each workload's words were last written, and the newest words deferred."""

    def __init__(
        self,
        rewant: Rewant,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``rewant(key, reason, message)`` asks for deferred words again once they may go."""
        self._rewant = rewant
        self._clock = clock
        # Per waiting workload: when words were first wanted, None once some are written.
        self._waiting_since: dict[str, float | None] = {}
        # Oldest first, so times that defer nothing any more leave from the front.
        self._written: dict[str, float] = {}
        self._deferred: dict[str, tuple[str, str]] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}

    def wanted(self, key: str) -> None:
        """A cycle wants words for the workload: its wait starts now unless it has already."""
        self._waiting_since.setdefault(key, self._clock())

    def ended(self, key: str) -> None:
        """The workload's wait is over (admitted or evicted): the next one starts afresh."""
        self._waiting_since.pop(key, None)

    def defer(self, key: str, reason: str, message: str, *, rewording: bool, held: bool) -> bool:
        """Whether to keep words until their wait has lasted ``FIRST_WORDS_AFTER_S`` (the
        first words of a wait, unless ``held``: those have waited behind their head already),
        or until the interval since the last words ends (``rewording``: only the message
        changes); the newest kept are wanted again then."""
        if reason == INADMISSIBLE:
            return False
        now = self._clock()
        since = self._waiting_since.get(key)
        if since is not None and not held:
            due = since + FIRST_WORDS_AFTER_S
        elif rewording and (last := self._written.get(key)) is not None:
            due = last + WORDS_MIN_INTERVAL_S
        else:
            return False
        wait = due - now
        if wait <= 0:
            return False
        self._deferred[key] = (reason, message)
        if key not in self._timers:
            self._timers[key] = asyncio.create_task(self._release(key, wait))
        return True

    def written(self, key: str) -> None:
        """Words are being written now: the next message change waits an interval."""
        now = self._clock()
        self._waiting_since[key] = None
        self._written.pop(key, None)
        self._written[key] = now
        horizon = now - WORDS_MIN_INTERVAL_S
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
        self._waiting_since.pop(key, None)

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
        self._waiting_since.clear()

    async def _release(self, key: str, wait: float) -> None:
        await asyncio.sleep(wait)
        del self._timers[key]
        reason, message = self._deferred.pop(key)
        self._rewant(key, reason, message)
