"""Three pipeline stages a ClusterQueue can choose instead of kq's built-in ones.

- ``LastFit`` (annotation ``kq.dev/flavor-assignment: LastFit``): the last flavor of the
  ClusterQueue's list that fits, e.g. to fill spot capacity before on-demand;
- ``NoPreemption`` (``kq.dev/preemption-policy: NoPreemption``): never evicts anything, whatever
  the ClusterQueue's ``preemption`` says;
- ``ParkAlways`` (``kq.dev/queueing-strategy: ParkAlways``): a head that does not fit waits for
  a cluster event, whatever the reason, and never holds its place for preemption.

Written from ``kq/hookspecs.py`` and ``kq.plugin`` alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import ClassVar

from kq.plugin import (
    ClusterQueue,
    ClusterQueueSnapshot,
    FlavorOption,
    FlavorResource,
    Mode,
    Register,
    RequeueReason,
    Snapshot,
    Target,
    WorkloadInfo,
    hookimpl,
)


class LastFit:
    NAME: ClassVar[str] = "LastFit"

    def choose(self, cq: ClusterQueue, options: Iterator[FlavorOption]) -> FlavorOption | None:
        fitting = [option for option in options if option.mode is Mode.FIT]
        return fitting[-1] if fitting else None


class NoPreemption:
    NAME: ClassVar[str] = "NoPreemption"

    def targets(
        self,
        snapshot: Snapshot,
        cq: ClusterQueueSnapshot,
        preemptor: WorkloadInfo,
        usage: Mapping[FlavorResource, int],
    ) -> Sequence[Target]:
        return ()


class ParkAlways:
    NAME: ClassVar[str] = "ParkAlways"
    STICKY_PREEMPTOR: ClassVar[bool] = False
    PARKS_EQUIVALENT: ClassVar[bool] = False

    def requeue_immediately(self, reason: RequeueReason) -> bool:
        return False


@hookimpl
def kq_register_flavor_assigners(register: Register) -> None:
    register(LastFit)


@hookimpl
def kq_register_preemption_policies(register: Register) -> None:
    register(NoPreemption)


@hookimpl
def kq_register_queueing_strategies(register: Register) -> None:
    register(ParkAlways)
