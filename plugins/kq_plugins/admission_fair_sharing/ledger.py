"""Each LocalQueue's consumed resources and pending entry penalties, in memory.

The scheduling cycle reads it only through queue order keys, and only between cycles: the
queue manager re-orders a ClusterQueue whose keys may have moved (``revision``) before it pops
the next heads. The controller keeps it from the API and persists it in LocalQueue status.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kq.plugin import (
    USAGE_BASED_ADMISSION_FAIR_SHARING,
    AdmissionFairSharingConfig,
    Admit,
    ClusterQueue,
    QueueOrder,
    WorkloadInfo,
    format_amount,
)
from kq_plugins.admission_fair_sharing.usage import (
    Amounts,
    added,
    decayed,
    entry_penalty,
    from_quantities,
    usage,
)

WAITING = "waiting for the LocalQueues' admission fair sharing usage to be read"


@dataclass
class Entry:
    consumed: dict[str, float] = field(default_factory=dict)
    last_update: float = 0.0
    """When ``consumed`` last decayed (or was read back from the status)."""
    penalties: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per admitted workload not yet seen ``Admitted``: what its admission adds meanwhile."""
    seeded: bool = False
    """Whether the usage persisted in the LocalQueue's status was folded in."""

    def penalty(self) -> dict[str, float]:
        return added(*self.penalties.values())


@dataclass
class Ledger:
    config: AdmissionFairSharingConfig | None = None
    entries: dict[str, Entry] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    queued: dict[str, str] = field(default_factory=dict)
    """Workload key → LocalQueue key, for the workloads of ClusterQueues that use it."""
    fair_queues: set[str] = field(default_factory=set)
    """The ClusterQueues whose admission scope asks for it."""
    revision: int = 0
    expected: bool = False
    """A controller will read the LocalQueues' statuses (``kq run``, ``kq dev``)."""
    ready: bool = False
    clock: Callable[[], float] = time.time

    def order(self, cq: ClusterQueue) -> QueueOrder | None:
        if self.config is None or cq.admission_mode != USAGE_BASED_ADMISSION_FAIR_SHARING:
            self.fair_queues.discard(cq.name)
            return None
        self.fair_queues.add(cq.name)
        return _Order(self)

    def preemption_usage(self, info: WorkloadInfo) -> float:
        """An admitted workload's LocalQueue usage if its ClusterQueue uses admission fair
        sharing (0 otherwise): Kueue preempts from the LocalQueue that used more first."""
        if self.config is None or info.cluster_queue not in self.fair_queues:
            return 0.0
        return self.usage_of(f"{info.obj.namespace}/{info.obj.queue_name}")

    def usage_of(self, lq: str) -> float:
        assert self.config is not None
        entry = self.entries.get(lq) or Entry()
        weight = self.weights.get(lq, 1.0)
        return usage(entry.consumed, entry.penalty(), weight, self.config.resource_weights)

    def waiting(self, info: WorkloadInfo) -> str | None:
        """Why a workload of a fair-sharing queue must wait: its usage is not read yet."""
        if self.expected and not self.ready and info.key in self.queued:
            return WAITING
        return None

    def admitted(self, decision: Admit) -> None:
        """The cycle admitted a workload: its LocalQueue pays the entry penalty at once."""
        lq = self.queued.pop(decision.key, None)
        if lq is None or self.config is None:
            return
        requests: dict[str, float] = {}
        for assignment in decision.admission.pod_set_assignments:
            usage_of = {r: format_amount(r, a) for r, a in assignment.resource_usage.items()}
            requests = added(requests, from_quantities(usage_of))
        entry = self._entry(lq)
        entry.penalties[decision.key] = entry_penalty(requests, self.config)
        self.revision += 1

    def seed(self, lq: str, consumed: Amounts) -> None:
        """Fold in what the LocalQueue's status says it consumed, once per process."""
        entry = self._entry(lq)
        if not entry.seeded:
            entry.consumed = added(entry.consumed, consumed)
            entry.seeded = True
            self.revision += 1

    def set_weight(self, lq: str, weight: float) -> None:
        if self.weights.get(lq, 1.0) != weight:
            self.weights[lq] = weight
            self.revision += 1

    def sample(self, lq: str, live: Amounts, now: float, *, settle: str | None = None) -> None:
        """Decay towards the live usage; ``settle``: a workload now admitted, whose penalty
        moves into the consumed resources."""
        assert self.config is not None
        entry = self._entry(lq)
        half_life = self.config.usage_half_life_time
        if half_life <= 0:
            entry.consumed = {}
        else:
            entry.consumed = decayed(entry.consumed, live, now - entry.last_update, half_life)
        entry.last_update = max(now, entry.last_update)
        if settle is not None:
            entry.consumed = added(entry.consumed, entry.penalties.pop(settle, {}))
        self.revision += 1

    def drop(self, lq: str, workload: str) -> None:
        entry = self.entries.get(lq)
        if entry is not None and entry.penalties.pop(workload, None) is not None:
            self.revision += 1

    def forget(self, lq: str) -> None:
        if self.entries.pop(lq, None) is not None or self.weights.pop(lq, None) is not None:
            self.revision += 1

    def _entry(self, lq: str) -> Entry:
        entry = self.entries.get(lq)
        if entry is None:
            entry = self.entries[lq] = Entry(last_update=self.clock())
        return entry


class _Order:
    """Lower LocalQueue usage first (Kueue's heap order under admission fair sharing)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def key(self, info: WorkloadInfo) -> tuple[Any, ...]:
        lq = f"{info.obj.namespace}/{info.obj.queue_name}"
        self.ledger.queued[info.key] = lq
        return (self.ledger.usage_of(lq),)

    def revision(self) -> int:
        return self.ledger.revision
