"""Kueue's requeue batching: cluster events retry parked workloads a second later, together."""

from __future__ import annotations

from collections.abc import Callable, Iterable

REQUEUE_BATCH_S = 1.0
"""Kueue's ``requeueBatchPeriod`` (pkg/cache/queue/inadmissible_workloads.go): the parked
workloads of the queues an event concerns go back to their heaps this long after the first
such event, and every event in between joins that one retry. A burst of finishing workloads
then costs one try of each parked head, not one per finish."""


class RequeueBatch:
    """ClusterQueues asked to retry their parked workloads, and when each retry is due.

    The core learns of events without a clock (an informer's change), so an ask is timed by the
    next cycle's ``now``: in kq that cycle follows the event at once.
    """

    __slots__ = ("_asked", "_due")

    def __init__(self) -> None:
        self._asked: set[str] = set()
        self._due: dict[str, float] = {}

    def ask(self, cluster_queues: Iterable[str]) -> None:
        due = self._due
        for name in cluster_queues:
            if name not in due:  # already timed: this event joins that retry
                self._asked.add(name)

    def take_due(self, now: float) -> list[str]:
        """Time the new asks from ``now``; the queues whose retry is due, forgotten here."""
        if self._asked:
            at = now + REQUEUE_BATCH_S
            for name in self._asked:
                self._due.setdefault(name, at)
            self._asked.clear()
        if not self._due:
            return []
        ready = [name for name, at in self._due.items() if at <= now]
        for name in ready:
            del self._due[name]
        return ready

    def next_at(self, moves: Callable[[str], bool]) -> float | None:
        """When the earliest timed retry is due whose queue ``moves`` says has parked workloads
        (``None`` when none): a retry that would move nothing needs no cycle of its own."""
        return min((at for name, at in self._due.items() if moves(name)), default=None)

    def waiting(self) -> bool:
        """Some ask is not yet timed: the next cycle will time it."""
        return bool(self._asked)
