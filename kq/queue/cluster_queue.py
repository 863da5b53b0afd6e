"""The pending workloads of one ClusterQueue: an ordered heap plus the parked inadmissible."""

from __future__ import annotations

import heapq
import itertools

from kq.queue.requeue import RequeueReason
from kq.queue.strategy import QueueingStrategy
from kq.workload.info import WorkloadInfo

_sequence = itertools.count()


class PendingQueue:
    """Heap order: sticky preemptor, then priority desc, queue time asc, UID.

    Replaced or removed workloads leave stale heap entries that ``pop`` skips.
    """

    def __init__(self, name: str, strategy: QueueingStrategy) -> None:
        self.name = name
        self.strategy = strategy
        self._heap: list[tuple[tuple[int, float, str], int, str]] = []
        self._active: dict[str, tuple[WorkloadInfo, int]] = {}
        self.inadmissible: dict[str, WorkloadInfo] = {}
        self.inflight: dict[str, WorkloadInfo] = {}
        self._requeue_generation = 0
        self._popped_at: dict[str, int] = {}
        self.sticky: str | None = None
        """The head waiting for its preemptions, popped first while it stays pending."""

    def __len__(self) -> int:
        return len(self._active) + len(self.inadmissible) + len(self.inflight)

    def push(self, info: WorkloadInfo) -> None:
        """Add or replace ``info`` in the heap (leaving any parked or in-flight copy)."""
        self.inadmissible.pop(info.key, None)
        self.inflight.pop(info.key, None)
        seq = next(_sequence)
        self._active[info.key] = (info, seq)
        heapq.heappush(self._heap, (info.order_key(), seq, info.key))

    def delete(self, key: str) -> bool:
        found = self._active.pop(key, None) is not None
        found |= self.inadmissible.pop(key, None) is not None
        found |= self.inflight.pop(key, None) is not None
        self._popped_at.pop(key, None)
        if key == self.sticky:
            self.sticky = None
        return found

    def contains(self, key: str) -> bool:
        return key in self._active or key in self.inadmissible or key in self.inflight

    def pop(self) -> WorkloadInfo | None:
        if self.sticky is not None and self.sticky in self._active:
            info, _ = self._active.pop(self.sticky)  # its heap entry is now stale
            return self._in_flight(info)
        heap = self._heap
        while heap:
            _, seq, key = heapq.heappop(heap)
            current = self._active.get(key)
            if current is not None and current[1] == seq:
                del self._active[key]
                return self._in_flight(current[0])
        return None

    def _in_flight(self, info: WorkloadInfo) -> WorkloadInfo:
        self.inflight[info.key] = info
        self._popped_at[info.key] = self._requeue_generation
        return info

    def requeue(self, info: WorkloadInfo, reason: RequeueReason) -> None:
        """Return a head after a cycle: back to the heap, or parked, as the strategy says."""
        if self.inflight.pop(info.key, None) is None:
            return  # deleted or replaced while in flight
        popped_at = self._popped_at.pop(info.key, -1)
        if reason is RequeueReason.PENDING_PREEMPTION and self.strategy.STICKY_PREEMPTOR:
            self.sticky = info.key
        if self.strategy.requeue_immediately(reason) or popped_at < self._requeue_generation:
            self.push(info)
        else:
            self.inadmissible[info.key] = info

    def done(self, key: str) -> None:
        """The head was admitted; it leaves the queue."""
        self.inflight.pop(key, None)
        self._popped_at.pop(key, None)
        if key == self.sticky:
            self.sticky = None

    def requeue_inadmissible(self) -> int:
        """Move every parked workload back to the heap; counts as an event for in-flight heads."""
        self._requeue_generation += 1
        parked = [i for i in self.inadmissible.values() if not i.obj.awaiting_requeue]
        for info in parked:
            self.push(info)
        return len(parked)

    def park(self, info: WorkloadInfo) -> None:
        """Hold a workload outside the heap until a requeue (or its own update) moves it."""
        self.delete(info.key)
        self.inadmissible[info.key] = info

    def pending(self) -> list[WorkloadInfo]:
        """All pending workloads in heap order (for status and visibility)."""
        items = [i for i, _ in self._active.values()]
        items += self.inadmissible.values()
        items += self.inflight.values()
        return sorted(items, key=WorkloadInfo.order_key)
