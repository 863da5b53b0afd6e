"""How often a ClusterQueue's parked workloads may be retried.

Every quota release retries the parked workloads of its cohort tree. Under churn that is a
try of every parked head per release, most of them failing again. Kueue batches these retries
(one per second per cohort tree, ten with feature gate ``SchedulerLongRequeueInterval``); kq
retries at once by default and, with a period, at most once per period per ClusterQueue: the
first retry after a quiet period still happens at the next cycle, later ones wait for the
period to end, all requests meanwhile folded into one.
"""

from __future__ import annotations

from collections.abc import Iterable


class RequeuePacer:
    """ClusterQueues whose retry is asked for, and when each may run next."""

    def __init__(self, period: float) -> None:
        self.period = period
        self._waiting: set[str] = set()
        self._last: dict[str, float] = {}
        """When each ClusterQueue's parked workloads were last retried."""

    def ask(self, cluster_queues: Iterable[str]) -> None:
        self._waiting.update(cluster_queues)

    def take(self, now: float) -> list[str]:
        """The waiting ClusterQueues whose period has run out, stamped as retried ``now``."""
        if not self._waiting:
            return []
        last, period = self._last, self.period
        ready = [name for name in self._waiting if name not in last or last[name] + period <= now]
        for name in ready:
            last[name] = now
        self._waiting.difference_update(ready)
        return ready

    def next_due(self) -> float | None:
        """When the earliest waiting retry may run; ``None`` if none waits."""
        if not self._waiting:
            return None
        last, never = self._last, float("-inf")
        return min(last.get(name, never) for name in self._waiting) + self.period

    def forget(self, cluster_queue: str) -> None:
        self._waiting.discard(cluster_queue)
        self._last.pop(cluster_queue, None)
