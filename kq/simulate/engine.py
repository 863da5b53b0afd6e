"""The virtual clock: arrivals and finishes in time order, scheduling cycles in between.

A cycle takes no virtual time. At each instant the due events are applied first (an arrival
enters its queue, a finished workload releases its quota), then cycles run until one would
decide nothing new: each Admit is assumed in the cache (and taken as Admitted: no admission
check controller runs here, so checks pass at once), each Preempt evicts its victims, which
release their quota and go back to their queues as Kueue requeues a preempted Workload. The
rule for another cycle at the same instant is the controller's (``_untried_heads`` in
``kq.controllers.admission``), so the simulator runs the cycles ``kq run`` would.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter

from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Preempt, Victim
from kq.scheduler.scheduler import Scheduler
from kq.simulate.trace import Arrival

FINISH, WAKE = 1, 2
"""Kinds of heap events, in their order at one time; an arrival goes before both."""
MAX_CYCLES_PER_INSTANT = 100_000
"""A safety net: a core that kept deciding at one instant would otherwise never let time move."""
MAX_EVICTIONS_PER_WORKLOAD = 100
"""Past this, a workload is taken to be in a preemption loop and the simulation stops: Kueue's
rules allow some (each preemption legal on its own), and every round schedules new finishes, so
the trace would never end."""


@dataclass(frozen=True)
class PreemptionLoop:
    """Why a simulation stopped early: ``key`` was evicted this often; ``reasons``: each
    ``<reason> by <preemptor>`` seen."""

    key: str
    evictions: int
    reasons: frozenset[str]
    at: float

    def describe(self) -> str:
        return (
            f"stopped at {self.at:g} s: {self.key} was preempted {self.evictions} times "
            f"({', '.join(sorted(self.reasons))}); these preemptions undo each other, as "
            f"Kueue's rules allow, so the trace would never end"
        )


class Listener:
    """What the engine reports; every method is a no-op here, override the ones you need."""

    def arrived(self, arrival: Arrival, now: float, unqueueable: str | None) -> None:
        """``unqueueable``: why the queues refused it (its LocalQueue is missing), if so."""

    def admitted(self, decision: Admit, now: float) -> None: ...

    def evicted(self, victim: Victim, preemptor: str, now: float) -> None: ...

    def finished(self, key: str, now: float) -> None: ...

    def updated(self, arrival: Arrival) -> None:
        """The workload changed (``Engine.update``): ``arrival`` is how it is queued now."""

    def cycled(self, result: CycleResult, now: float, seconds: float) -> None:
        """After each cycle, its decisions carried out; ``seconds``: the cycle's wall time."""

    def settled(self, now: float) -> None:
        """Every cycle of this instant has run; the next event is later."""


class Engine:
    """Drives one ``Scheduler`` through a trace; ``run`` returns the virtual end time."""

    def __init__(
        self, scheduler: Scheduler, arrivals: Iterable[Arrival], listener: Listener | None = None
    ) -> None:
        self.scheduler = scheduler
        self.listener = listener or Listener()
        self.arrivals = {a.workload.key: a for a in arrivals}
        # Finishes and wakes: (time, kind, sequence, key, admission number), FIFO among equal
        # times and kinds. Arrivals, all known up front, wait outside the heap, latest first
        # (ties in trace order from the end), so the heap stays as small as what runs.
        self._events: list[tuple[float, int, int, str, int]] = []
        by_time = sorted(((a.at, key) for key, a in self.arrivals.items()), key=itemgetter(0))
        self._arriving = by_time[::-1]
        self._sequence = 0
        self._admissions: dict[str, int] = {}
        self._wakes: dict[int, Callable[[float], None]] = {}
        self.arrived: set[str] = set()
        self.running: set[str] = set()
        self.done: set[str] = set()
        self.cycles = 0
        self._evictions: dict[str, int] = {}
        self._reasons: dict[str, set[str]] = {}
        self.loop: PreemptionLoop | None = None
        """Set when the run stopped on a preemption loop."""
        self._requeue_wake: float | None = None

    def _push(self, at: float, kind: int, key: str, admission: int) -> None:
        self._sequence += 1
        heapq.heappush(self._events, (at, kind, self._sequence, key, admission))

    def wake_at(self, at: float, callback: Callable[[float], None]) -> None:
        """An instant at ``at`` even if nothing arrives or finishes then (a plugin waiting for
        time to pass); ``callback(at)`` runs before that instant's cycles."""
        self._push(at, WAKE, "", 0)
        self._wakes[self._sequence] = callback

    def update(self, arrival: Arrival) -> None:
        """The workload changed (a plugin controller lowered its priority, say): from now on
        it is queued as ``arrival``; if pending, it is queued again at once, as the feed does
        on a Workload update (a parked one stays parked until retried)."""
        key = arrival.workload.key
        self.arrivals[key] = arrival
        self.listener.updated(arrival)
        if key in self.arrived and key not in self.running and key not in self.done:
            self.scheduler.queues.add_workload(arrival.workload)

    def run(self, until: float | None = None) -> float:
        """Until no event is left (or the next is after ``until``); workloads that never fit
        stay pending, and a preemption loop stops it (``loop``). Returns the last instant
        simulated."""
        following = self._next_at()
        now = 0.0 if following is None else following
        while True:
            self._apply_due(now)
            self._cycles_at(now)
            self.listener.settled(now)
            self._wake_for_requeues(now)
            if self.loop is not None:
                return now
            following = self._next_at()
            if following is None or (until is not None and following > until):
                return now
            now = following

    def _wake_for_requeues(self, now: float) -> None:
        """An instant for the paced retries of parked workloads that wait (``kq.queue.pacing``),
        as the controller wakes for them."""
        due = self.scheduler.queues.requeue_due()
        if due is not None and max(due, now) != self._requeue_wake:
            self._requeue_wake = max(due, now)
            self.wake_at(self._requeue_wake, _nothing)

    def _next_at(self) -> float | None:
        """When the next event is due; ``None`` when none is left."""
        arriving, events = self._arriving, self._events
        if arriving and (not events or arriving[-1][0] <= events[0][0]):
            return arriving[-1][0]
        return events[0][0] if events else None

    def _apply_due(self, now: float) -> None:
        """Every event due by ``now``, in (time, kind, sequence) order: at one time arrivals,
        in trace order, then finishes, then wakes."""
        queues, scheduler = self.scheduler.queues, self.scheduler
        arriving, events = self._arriving, self._events
        while True:
            at = arriving[-1][0] if arriving else None
            if at is not None and at <= now and (not events or at <= events[0][0]):
                key = arriving.pop()[1]
                arrival = self.arrivals[key]
                self.arrived.add(key)
                self.listener.arrived(arrival, now, queues.add_workload(arrival.workload))
                continue
            if not events or events[0][0] > now:
                return
            _, kind, sequence, key, admission = heapq.heappop(events)
            if kind == WAKE:
                self._wakes.pop(sequence)(now)
            elif self._admissions.get(key) == admission and key in self.running:
                self.running.discard(key)
                self.done.add(key)
                scheduler.release(key)
                self.listener.finished(key, now)
            # Otherwise the workload was preempted since: this finish is stale.

    def _cycles_at(self, now: float) -> None:
        for _ in range(MAX_CYCLES_PER_INSTANT):
            started = time.perf_counter()
            result = self.scheduler.run_cycle(now)
            seconds = time.perf_counter() - started
            self.cycles += 1
            again = self._apply(result, now)
            self.listener.cycled(result, now, seconds)
            if not again or self.loop is not None:
                return

    def _apply(self, result: CycleResult, now: float) -> bool:
        """Carry out the decisions; whether another cycle at ``now`` could decide more."""
        cache, queues = self.scheduler.cache, self.scheduler.queues
        evicted = False
        for decision in result.decisions:
            if isinstance(decision, Admit):
                key = decision.key
                cache.mark_admitted(key)
                number = self._admissions.get(key, 0) + 1
                self._admissions[key] = number
                self.running.add(key)
                self._push(now + self.arrivals[key].runtime, FINISH, key, number)
                self.listener.admitted(decision, now)
            elif isinstance(decision, Preempt):
                for victim in decision.victims:
                    if victim.key not in self.running:
                        continue  # already evicted by another preemptor this instant
                    evicted = True
                    self.running.discard(victim.key)
                    self.scheduler.release(victim.key)
                    queues.add_workload(self.arrivals[victim.key].workload)
                    self.listener.evicted(victim, decision.key, now)
                    self._count_eviction(victim, decision.key, now)
        return evicted or self._untried_heads(result)

    def _count_eviction(self, victim: Victim, preemptor: str, now: float) -> None:
        count = self._evictions[victim.key] = self._evictions.get(victim.key, 0) + 1
        reasons = self._reasons.setdefault(victim.key, set())
        reasons.add(f"{victim.reason} by {preemptor}")
        if count >= MAX_EVICTIONS_PER_WORKLOAD and self.loop is None:
            self.loop = PreemptionLoop(victim.key, count, frozenset(reasons), now)

    def _untried_heads(self, result: CycleResult) -> bool:
        """As the controller: a head back in its heap would be decided the same way again, so
        only a queue whose head left the heap and still has workloads waiting is retried."""
        queues = self.scheduler.queues.queues
        for decision in result.decisions:
            cq = (
                decision.admission.cluster_queue
                if isinstance(decision, Admit)
                else decision.cluster_queue
            )
            queue = queues.get(cq)
            if queue is None:
                continue
            if queue.contains(decision.key) and not queue.is_parked(decision.key):
                continue
            if queue.untried_count() > 0:
                return True
        return False

    def pending(self) -> list[str]:
        """Workloads that arrived and hold no quota (left pending at the end)."""
        return sorted(self.arrived - self.running - self.done)


def _nothing(now: float) -> None:
    """A wake whose only work is the cycle it brings."""
