"""Three pipeline stages a ClusterQueue can choose instead of kq's built-in ones.

- ``LastFit`` (annotation ``kq.dev/flavor-assignment: LastFit``): the last flavor of the
  ClusterQueue's list that fits, e.g. to fill spot capacity before on-demand;
- ``NoPreemption`` (``kq.dev/preemption-policy: NoPreemption``): never evicts anything, whatever
  the ClusterQueue's ``preemption`` says;
- ``ParkAlways`` (``kq.dev/queueing-strategy: ParkAlways``): a head that does not fit waits for
  a cluster event, whatever the reason, and never holds its place for preemption;
- ``SmallestFirst`` (``kq.dev/queueing-strategy: SmallestFirst``): owns its queue's order, the
  workload asking for the least CPU first (then the oldest), and parks like BestEffortFIFO;
- ``SpareOnly`` (``kq.dev/hot-swap: SpareOnly``): a workload on a failed node moves only to
  free healthy capacity; it never evicts anyone to recover;
- a veto (``kq_workload_admissible``) for every queue: a Workload labelled
  ``kq-stages.example/hold: "true"`` waits, saying so, until the label goes;
- terms (``kq_admission_terms``) for every queue: a Workload labelled
  ``kq-stages.example/borrow-only: "true"`` is admitted only on capacity its ClusterQueue
  borrows from its cohort, never by preemption;
- ``ByRank`` (``kq_queue_order``) for every queue: pending workloads are ordered by their
  ``kq-stages.example/rank`` label (an integer, lower first; unlabelled is 0), then by the
  queue's strategy.

Written from ``kq/hookspecs.py`` and ``kq.plugin`` alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import ClassVar

from kq.plugin import (
    AdmissionTerms,
    ClusterQueue,
    ClusterQueueSnapshot,
    FlavorOption,
    FlavorResource,
    Mode,
    QueueOrder,
    Recovery,
    Register,
    RequeueReason,
    Snapshot,
    Target,
    TopologyAssignment,
    Unplaced,
    WorkloadInfo,
    affected_slices,
    hookimpl,
    keep_except,
    place,
    request_for,
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


class SpareOnly:
    NAME: ClassVar[str] = "SpareOnly"

    def recover(
        self, snapshot: Snapshot, workload: WorkloadInfo, failed: frozenset[str]
    ) -> Recovery | str | None:
        admission = workload.obj.admission
        if admission is None:
            return None
        pod_sets = {ps.name: ps for ps in workload.obj.pod_sets}
        moved: dict[str, TopologyAssignment] = {}
        for psa in admission.pod_set_assignments:
            flavor = snapshot.flavors.get(next(iter(psa.flavors.values()), ""))
            pod_set = pod_sets.get(psa.name)
            if psa.topology is None or flavor is None or pod_set is None:
                continue
            request = request_for(flavor, pod_set, psa.count)
            if request is None:
                continue
            slices, lost = affected_slices(psa.topology, min(request.slice_size, psa.count), failed)
            if not lost:
                continue
            keep = keep_except(slices, lost)
            ignore = frozenset({workload.key})
            placed = place(snapshot.topology, flavor, pod_set, psa.count, request, ignore, keep)
            if isinstance(placed, Unplaced):
                return f"no spare capacity: {placed.message}"
            moved[psa.name] = placed
        return Recovery(moved) if moved else None


HOLD_LABEL = "kq-stages.example/hold"


@hookimpl
def kq_workload_admissible(workload: WorkloadInfo, cluster_queue: ClusterQueue) -> str | None:
    if workload.obj.labels.get(HOLD_LABEL) == "true":
        return f"held by kq-stages: the Workload is labelled {HOLD_LABEL}=true"
    return None


BORROW_LABEL = "kq-stages.example/borrow-only"


@hookimpl
def kq_admission_terms(workload: WorkloadInfo) -> AdmissionTerms | None:
    if workload.obj.labels.get(BORROW_LABEL) == "true":
        return AdmissionTerms(borrow_only=True, reason=f"kq-stages: labelled {BORROW_LABEL}")
    return None


@hookimpl
def kq_register_hot_swap_policies(register: Register) -> None:
    register(SpareOnly)


@hookimpl
def kq_register_flavor_assigners(register: Register) -> None:
    register(LastFit)


@hookimpl
def kq_register_preemption_policies(register: Register) -> None:
    register(NoPreemption)


class SmallestFirst:
    NAME: ClassVar[str] = "SmallestFirst"
    STICKY_PREEMPTOR: ClassVar[bool] = True
    PARKS_EQUIVALENT: ClassVar[bool] = False

    def requeue_immediately(self, reason: RequeueReason) -> bool:
        return reason is RequeueReason.FAILED_AFTER_NOMINATION

    def order_key(self, info: WorkloadInfo) -> tuple[int, float, str]:
        cpu = sum(ps.requests.get("cpu", 0) * ps.count for ps in info.obj.pod_sets)
        return (cpu, info.queue_time, info.key)


@hookimpl
def kq_register_queueing_strategies(register: Register) -> None:
    register(ParkAlways)
    register(SmallestFirst)


RANK_LABEL = "kq-stages.example/rank"


class ByRank:
    def key(self, info: WorkloadInfo) -> tuple[int]:
        rank = info.obj.labels.get(RANK_LABEL, "0")
        return (int(rank) if rank.lstrip("-").isdigit() else 0,)

    def revision(self) -> int:
        return 0  # a label change re-queues the workload, with its new key


@hookimpl
def kq_queue_order(cluster_queue: ClusterQueue) -> QueueOrder | None:
    return ByRank()
