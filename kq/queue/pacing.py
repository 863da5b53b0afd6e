"""How often a ClusterQueue's parked workloads may be retried.

Every quota release retries the parked workloads of its cohort tree. Under churn that is a
try of every parked head per release, most of them failing again, and a head that borrows
takes what was freed before its owner's next workload arrives, which then reclaims it: an
eviction. Kueue batches these retries: a retry waits one second (ten with feature gate
``SchedulerLongRequeueInterval``) and every request meanwhile folds into it. kq does the same
(``KqConfig.requeue_period``); a retry's period starts at the first cycle after it is asked
for. Without a period (the core's tests, benchmarks' ``--requeue-period 0``) there is no
pacer and a retry runs at once.
"""

from __future__ import annotations

from collections.abc import Iterable

_NOW = float("-inf")


class RequeuePacer:
    """ClusterQueues whose retry is asked for, and when each runs."""

    def __init__(self, period: float) -> None:
        self.period = period
        self._fresh: set[str] = set()
        """Asked for since the last ``take``: their period starts there (the core has no clock
        of its own; time comes in with each cycle)."""
        self._due: dict[str, float] = {}

    def ask(self, cluster_queues: Iterable[str]) -> None:
        due = self._due
        self._fresh.update(name for name in cluster_queues if name not in due)

    def take(self, now: float) -> list[str]:
        """The ClusterQueues whose retry is due ``now``; fresh requests start their period."""
        due = self._due
        if self._fresh:  # none of them is due yet: ``ask`` leaves those out
            due.update(dict.fromkeys(self._fresh, now + self.period))
            self._fresh.clear()
        ready = [name for name, at in due.items() if at <= now]
        for name in ready:
            del due[name]
        return ready

    def next_due(self) -> float | None:
        """When the earliest retry runs (``-inf``: a request waits for its period to start at
        the next ``take``); ``None`` if none waits."""
        if self._fresh:
            return _NOW
        return min(self._due.values()) if self._due else None

    def forget(self, cluster_queue: str) -> None:
        self._fresh.discard(cluster_queue)
        self._due.pop(cluster_queue, None)
