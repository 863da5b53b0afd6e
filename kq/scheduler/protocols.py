"""What the core asks of the flavor-assigner and preemption plugins."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Protocol

from kq.api.clusterqueue import ClusterQueue
from kq.api.quotas import FlavorResource
from kq.api.topology import TopologyAssignment
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.scheduler.modes import FlavorOption
from kq.workload.info import WorkloadInfo


class FlavorAssigner(Protocol):
    """Picks one option from the flavors of a resource group, evaluated lazily in CQ order."""

    NAME: ClassVar[str]

    def choose(self, cq: ClusterQueue, options: Iterator[FlavorOption]) -> FlavorOption | None:
        """The option to take; ``None`` when every flavor was NoFit (or none was offered)."""
        ...


@dataclass(init=False, slots=True)
class Target:
    """A workload to evict so the preemptor fits, with the ``Preempted`` condition reason."""

    workload: Final[WorkloadInfo]
    reason: Final[str]
    """Kueue's four (InClusterQueue, InCohortReclamation, ...) or a policy's own, a condition
    reason (CamelCase letters and digits)."""
    description: Final[str]
    """The words after "due to" in the victim's message; Kueue's for its four reasons."""

    def __init__(self, workload: WorkloadInfo, reason: str, description: str = "") -> None:
        self.workload = workload
        self.reason = reason
        self.description = description


class Preemptor(Protocol):
    """Proposes the victims that would let a workload fit in its ClusterQueue."""

    NAME: ClassVar[str]

    def targets(
        self,
        snapshot: Snapshot,
        cq: ClusterQueueSnapshot,
        preemptor: WorkloadInfo,
        usage: Mapping[FlavorResource, int],
    ) -> Sequence[Target]:
        """A minimal victim set, or empty; the snapshot must be left as it was found."""
        ...


@dataclass(frozen=True, slots=True)
class Recovery:
    """A workload's way back after node failures: pod sets' new domains, and who makes room."""

    topology: Mapping[str, TopologyAssignment]
    """Pod set name → its whole new assignment; pod sets not named keep theirs."""
    victims: Sequence[Target] = ()
    """Lower-priority workloads to evict first (``Evicted``, reason ``Preempted``)."""


class HotSwapPolicy(Protocol):
    """Decides how an admitted workload hit by failed nodes is re-placed."""

    NAME: ClassVar[str]

    def recover(
        self, snapshot: Snapshot, workload: WorkloadInfo, failed: frozenset[str]
    ) -> Recovery | str | None:
        """A recovery; a message saying why none is possible now (tried again on the next
        node change); or ``None`` to leave the workload as it is. Pure."""
        ...
