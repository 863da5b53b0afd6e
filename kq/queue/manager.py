"""LocalQueue → ClusterQueue routing and the per-ClusterQueue pending queues."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from kq.api.localqueue import LocalQueue
from kq.api.workload import Workload
from kq.queue.cluster_queue import PendingQueue, Words
from kq.queue.order import Ordered, QueueOrder
from kq.queue.pacing import RequeuePacer
from kq.queue.requeue import RequeueReason
from kq.queue.strategy import QueueingStrategy
from kq.workload.info import Shape, WorkloadInfo, new_info


class QueueManager:
    """Owns every pending workload; the scheduler pops heads and hands them back."""

    def __init__(
        self,
        strategies: Mapping[str, QueueingStrategy],
        eviction_timestamp: bool = True,
        requeue_period: float = 0.0,
    ) -> None:
        """``requeue_period``: retry a ClusterQueue's parked workloads at most this often
        (seconds; see ``kq.queue.pacing``), 0 for at once."""
        self._strategies = strategies
        self._pacer = RequeuePacer(requeue_period) if requeue_period > 0 else None
        self._eviction_timestamp = eviction_timestamp
        self.local_queues: dict[str, LocalQueue] = {}
        self.queues: dict[str, PendingQueue] = {}
        self._where: dict[str, str] = {}
        self._local_queue_of: dict[str, str] = {}
        self._pending_per_local_queue: dict[str, int] = {}
        # Per ClusterQueue, what its pending workloads request in all and how many request
        # each resource, and each one's part: a metric reads the totals every second, and a
        # walk over 100,000 pending workloads costs 0.1 s.
        self._requested: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
        self._requests_of: dict[str, dict[str, int]] = {}

    # -- queues --------------------------------------------------------------------------

    def set_cluster_queue(
        self, name: str, strategy_name: str, order: QueueOrder | None = None
    ) -> None:
        """Create the queue, or switch its strategy (pending workloads are kept); ``order``:
        a plugin's order ahead of the strategy's."""
        strategy: QueueingStrategy = self._strategies[strategy_name]
        if order is not None:
            strategy = Ordered(strategy, order)
        queue = self.queues.get(name)
        if queue is None:
            self.queues[name] = PendingQueue(name, strategy)
        else:
            queue.set_strategy(strategy)
            queue.requeue_inadmissible()

    def delete_cluster_queue(self, name: str) -> None:
        if self._pacer is not None:
            self._pacer.forget(name)
        queue = self.queues.pop(name, None)
        if queue is not None:
            for info in queue.unordered():  # already out of self.queues: _forget leaves it be
                self._forget(info.key)

    def set_local_queue(self, lq: LocalQueue) -> None:
        self.local_queues[lq.key] = lq

    def delete_local_queue(self, key: str) -> None:
        self.local_queues.pop(key, None)

    # -- workloads -----------------------------------------------------------------------

    def add_workload(self, workload: Workload) -> str | None:
        """Queue a pending workload; returns why it can't be queued (Kueue's message), if so."""
        previous = self.queues.get(self._where.get(workload.key, ""))
        parked = previous.inadmissible.get(workload.key) if previous is not None else None
        self.delete_workload(workload.key)
        if not workload.active or workload.is_finished or workload.has_quota_reservation:
            return None
        lq_key = f"{workload.namespace}/{workload.queue_name}"
        lq = self.local_queues.get(lq_key)
        if lq is None:
            return f"LocalQueue {workload.queue_name} doesn't exist"
        queue = self.queues.get(lq.cluster_queue)
        if queue is None:
            return f"ClusterQueue {lq.cluster_queue} doesn't exist"
        info = new_info(workload, lq.cluster_queue, self._eviction_timestamp)
        if workload.awaiting_requeue:
            queue.park(info)  # backing off: the update that sets Requeued=True re-adds it
        else:
            queue.add(info, parked if queue is previous else None)
        self._where[workload.key] = lq.cluster_queue
        self._local_queue_of[workload.key] = lq_key
        counts = self._pending_per_local_queue
        counts[lq_key] = counts.get(lq_key, 0) + 1
        requests = self._requests_of[workload.key] = workload_requests(workload)
        totals, holders = self._requested.setdefault(lq.cluster_queue, ({}, {}))
        for resource, amount in requests.items():  # Counter.update would loop in Python
            totals[resource] = totals.get(resource, 0) + amount
            holders[resource] = holders.get(resource, 0) + 1
        return None

    def delete_workload(self, key: str) -> None:
        cq = self._forget(key)
        if cq is not None and cq in self.queues:
            self.queues[cq].delete(key)

    def _forget(self, key: str) -> str | None:
        lq = self._local_queue_of.pop(key, None)
        if lq is not None:
            self._pending_per_local_queue[lq] -= 1
        cq = self._where.pop(key, None)
        requests = self._requests_of.pop(key, None)
        if cq is not None and requests:
            totals, holders = self._requested[cq]
            for resource, amount in requests.items():
                left = holders[resource] - 1
                if left:
                    holders[resource] = left
                    totals[resource] -= amount
                else:
                    del totals[resource], holders[resource]
        return cq

    def heads(self, active: Collection[str] | None = None) -> list[WorkloadInfo]:
        """Pop one workload from every (active) ClusterQueue's heap."""
        heads = []
        for name, queue in self.queues.items():
            if active is not None and name not in active:
                continue
            if isinstance(queue.strategy, Ordered) and queue.strategy.stale():
                queue.set_strategy(Ordered(queue.strategy.strategy, queue.strategy.order))
            head = queue.pop()
            if head is not None:
                heads.append(head)
        return heads

    def preemptors(self, heads: Iterable[WorkloadInfo]) -> frozenset[str]:
        """The heads that are their ClusterQueue's preemptor (see ``PendingQueue.preemptor``)."""
        queues = self.queues
        return frozenset(
            h.key
            for h in heads
            if (q := queues.get(h.cluster_queue)) is not None and q.preemptor == h.key
        )

    def requeue(
        self,
        info: WorkloadInfo,
        reason: RequeueReason,
        words: Words | None = None,
        now: float = 0.0,
    ) -> None:
        queue = self.queues.get(info.cluster_queue)
        if queue is not None:
            queue.requeue(info, reason, words, now)

    def held_behind(self, cq: str, head: str, reason: RequeueReason) -> list[WorkloadInfo]:
        """Who waits behind the head ``head`` of ``cq`` (see ``PendingQueue.held_behind``)."""
        queue = self.queues.get(cq)
        return [] if queue is None else queue.held_behind(head, reason)

    def take_parked_words(self, now: float) -> list[tuple[WorkloadInfo, Words]]:
        """Workloads that joined a parked shape, with its head's words (see ``PendingQueue``)."""
        told: list[tuple[WorkloadInfo, Words]] = []
        for queue in self.queues.values():
            if queue.words_due(now):  # asked every cycle of every queue: no list built
                told += queue.take_parked_words(now)
        return told

    def has_words_to_tell(self) -> bool:
        """Some workload of a parked shape waits for its words (a cycle will hand them out)."""
        return any(queue.has_words_to_tell() for queue in self.queues.values())

    def admitted(self, key: str) -> None:
        """The head got quota; it is no longer pending."""
        cq = self._forget(key)
        if cq is not None and cq in self.queues:
            self.queues[cq].done(key)

    def requeue_inadmissible(self, cluster_queues: Iterable[str]) -> None:
        """A cluster event may let parked workloads fit: move them back to their heaps, at
        once or, paced, when ``take_requeues`` finds their period over."""
        if self._pacer is None:
            self._requeue(cluster_queues)
            return
        # A workload parked later was tried against a state with this event in it already
        # (cycles are synchronous: no head is in flight across an event).
        queues = self.queues
        self._pacer.ask(
            name
            for name in cluster_queues
            if (q := queues.get(name)) is not None and q.has_parked()
        )

    @property
    def paced(self) -> bool:
        """Retries of parked workloads wait for a requeue period."""
        return self._pacer is not None

    def early_candidates(self, cq: str) -> list[tuple[WorkloadInfo, bool]]:
        """Heads of ``cq``'s parked shapes, each with whether it may be released early."""
        queue = self.queues.get(cq)
        return [] if queue is None or not queue.parked_shapes else queue.early_candidates()

    def requests_of(self, key: str) -> Mapping[str, int]:
        """A pending workload's requests in all, per resource, as the metrics count them."""
        return self._requests_of.get(key, {})

    def release_shapes(self, cq: str, shapes: Iterable[Shape]) -> None:
        queue = self.queues.get(cq)
        if queue is not None:
            queue.release_shapes(shapes)

    def take_requeues(self, now: float) -> None:
        """Carry out the paced retries that are due (the scheduler, before each cycle)."""
        if self._pacer is not None:
            self._requeue(self._pacer.take(now))

    def requeue_due(self) -> float | None:
        """When a paced retry waits to run: the runtime's wake-up time."""
        return None if self._pacer is None else self._pacer.next_due()

    def _requeue(self, cluster_queues: Iterable[str]) -> None:
        queues = self.queues
        for name in cluster_queues:
            queue = queues.get(name)
            if queue is not None:
                queue.requeue_inadmissible()

    # -- status numbers ------------------------------------------------------------------

    def pending_total(self) -> int:
        """Pending workloads in every ClusterQueue (benchmarks sample it each cycle: O(1))."""
        return len(self._where)

    def pending_count(self, cq: str) -> int:
        queue = self.queues.get(cq)
        return 0 if queue is None else len(queue)

    def pending_requests(self, cq: str) -> Mapping[str, int]:
        """What the pending workloads of ``cq`` request in all, per resource (milli-units
        for CPU, as ``PodSet.requests``)."""
        totals = self._requested.get(cq)
        return {} if totals is None else totals[0]

    def pending_in_local_queue(self, key: str) -> int:
        """Pending workloads that came through the LocalQueue ``namespace/name``."""
        return self._pending_per_local_queue.get(key, 0)


def workload_requests(workload: Workload) -> dict[str, int]:
    """Every pod's requests in all, per resource."""
    out: dict[str, int] = {}
    for ps in workload.pod_sets:
        for resource, amount in ps.requests.items():
            out[resource] = out.get(resource, 0) + amount * ps.count
    return out
