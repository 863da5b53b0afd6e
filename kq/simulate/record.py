"""What happened in a run: each workload's admissions and evictions, and the queues' state
after every instant at which it changed (a step function of virtual time)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kq.api.quotas import FlavorResource
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Victim
from kq.simulate.engine import Listener
from kq.simulate.model import Core
from kq.simulate.trace import Arrival

Usage = Mapping[FlavorResource, int]
Progress = Callable[[int, int, float], None]
"""``(finished or evicted-and-done count, total, virtual now)``, at most twice a second."""


@dataclass
class Stint:
    """One admission: from ``start`` to ``end`` (finish or eviction; ``None`` while running)."""

    start: float
    flavors: Mapping[str, str]
    borrowing: bool
    end: float | None = None
    evicted_by: str | None = None
    reason: str = ""


@dataclass
class WorkloadRecord:
    key: str
    cluster_queue: str
    arrival: float
    runtime: float
    priority: int
    effective_priority: int
    """``priority`` plus the boost last honoured (a budget's LowerPriority, a trace's boost)."""
    stints: list[Stint] = field(default_factory=list)
    finished: float | None = None
    unqueueable: str | None = None

    @property
    def first_admission(self) -> float | None:
        return self.stints[0].start if self.stints else None

    @property
    def wait(self) -> float | None:
        """Time to (first) admission."""
        first = self.first_admission
        return None if first is None else first - self.arrival

    @property
    def preemptions(self) -> int:
        return sum(s.evicted_by is not None for s in self.stints)


@dataclass(frozen=True, slots=True)
class QueueState:
    usage: Usage
    pending: int
    running: int


@dataclass
class Sample:
    time: float
    queues: dict[str, QueueState]


class Recorder(Listener):
    """Listens to an ``Engine`` and keeps the records and samples the figures come from."""

    def __init__(self, core: Core, arrivals: list[Arrival], progress: Progress | None = None):
        self.core = core
        self.workloads: dict[str, WorkloadRecord] = {}
        for arrival in arrivals:
            wl = arrival.workload
            lq = core.queues.local_queues.get(f"{wl.namespace}/{wl.queue_name}")
            cq = lq.cluster_queue if lq is not None else ""
            self.workloads[wl.key] = WorkloadRecord(
                wl.key,
                cq,
                arrival.at,
                arrival.runtime,
                wl.priority,
                wl.priority + wl.priority_boost,
            )
        self.samples: list[Sample] = []
        self.cycles = 0
        self.cycle_seconds = 0.0
        self._progress = progress
        self._done = 0
        self._last_progress = 0.0

    def arrived(self, arrival: Arrival, now: float, unqueueable: str | None) -> None:
        if unqueueable is not None:
            self.workloads[arrival.workload.key].unqueueable = unqueueable
            self._done += 1

    def updated(self, arrival: Arrival) -> None:
        wl = arrival.workload
        self.workloads[wl.key].effective_priority = wl.priority + wl.priority_boost

    def admitted(self, decision: Admit, now: float) -> None:
        flavors: dict[str, str] = {}
        for assignment in decision.admission.pod_set_assignments:
            flavors.update(assignment.flavors)
        record = self.workloads[decision.key]
        record.stints.append(Stint(now, flavors, decision.borrowing))

    def evicted(self, victim: Victim, preemptor: str, now: float) -> None:
        stint = self.workloads[victim.key].stints[-1]
        stint.end, stint.evicted_by, stint.reason = now, preemptor, victim.reason

    def finished(self, key: str, now: float) -> None:
        record = self.workloads[key]
        record.stints[-1].end = record.finished = now
        self._done += 1

    def cycled(self, result: CycleResult, now: float, seconds: float) -> None:
        self.cycles += 1
        self.cycle_seconds += seconds

    def settled(self, now: float) -> None:
        cache, queues = self.core.cache, self.core.queues
        previous = self.samples[-1].queues if self.samples else {}
        states, changed = {}, not previous
        for name in cache.cluster_queues:
            state = QueueState(
                dict(cache.usage_of(name)),
                queues.pending_count(name),
                len(cache.workloads_in(name)),
            )
            old = previous.get(name)
            if old == state:
                state = old  # share the unchanged state rather than keep copies
            else:
                changed = True
            states[name] = state
        if changed:
            self.samples.append(Sample(now, states))
        self._report(now)

    def _report(self, now: float) -> None:
        if self._progress is None:
            return
        wall = time.monotonic()
        if wall - self._last_progress >= 0.5:
            self._last_progress = wall
            self._progress(self._done, len(self.workloads), now)
