"""SliceHotSwap: a workload whose slice failed moves to healthy domains, taken from lower
priorities when no free one is left.

A free healthy domain always comes first, and then nothing is evicted. Otherwise the
lowest-priority workloads holding domains are evicted, fewest first, never one of equal or
higher priority. The failed domain is never chosen: its nodes are not usable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from kq.plugin import (
    Recovery,
    Register,
    Snapshot,
    Target,
    TopologyAssignment,
    Unplaced,
    WorkloadInfo,
    affected_slices,
    hookimpl,
    keep_except,
    place,
    placements_of,
    request_for,
)

HOT_SWAP_REASON = "HotSwap"


@dataclass(frozen=True, slots=True)
class _Move:
    pod_set: str
    flavor: str
    count: int
    keep: dict[int, list[tuple[str, str, int]]]
    failed_domains: tuple[str, ...]


class SliceHotSwap:
    NAME: ClassVar[str] = "SliceHotSwap"

    def recover(
        self, snapshot: Snapshot, workload: WorkloadInfo, failed: frozenset[str]
    ) -> Recovery | str | None:
        moves = _moves(snapshot, workload, failed)
        if not moves:
            return None
        outcome = _replace(snapshot, workload, moves, ())
        if not isinstance(outcome, Unplaced):
            return Recovery(outcome)
        victims: list[WorkloadInfo] = []
        for candidate in _candidates(snapshot, workload):
            victims.append(candidate)
            found = _replace(snapshot, workload, moves, victims)
            if not isinstance(found, Unplaced):
                victims = _fewest(snapshot, workload, moves, victims)
                placed = _replace(snapshot, workload, moves, victims)
                assert not isinstance(placed, Unplaced)
                return Recovery(placed, _targets(workload, victims, moves))
        return outcome.message


def _moves(snapshot: Snapshot, workload: WorkloadInfo, failed: frozenset[str]) -> list[_Move]:
    admission = workload.obj.admission
    if admission is None:
        return []
    pod_sets = {ps.name: ps for ps in workload.obj.pod_sets}
    moves = []
    for psa in admission.pod_set_assignments:
        pod_set = pod_sets.get(psa.name)
        if psa.topology is None or pod_set is None:
            continue
        for flavor_name in dict.fromkeys(psa.flavors.values()):
            flavor = snapshot.flavors.get(flavor_name)
            request = None if flavor is None else request_for(flavor, pod_set, psa.count)
            if request is None:
                continue
            size = min(request.slice_size, psa.count) or 1
            slices, lost = affected_slices(psa.topology, size, failed)
            if lost:
                domains = tuple(sorted({d or n for i in lost for d, n, _ in slices[i]
                                        if n in failed}))  # fmt: skip
                moves.append(
                    _Move(psa.name, flavor_name, psa.count, keep_except(slices, lost), domains)
                )
            break
    return moves


def _replace(
    snapshot: Snapshot,
    workload: WorkloadInfo,
    moves: Sequence[_Move],
    victims: Iterable[WorkloadInfo],
) -> dict[str, TopologyAssignment] | Unplaced:
    ignore = frozenset({workload.key, *(v.key for v in victims)})
    pod_sets = {ps.name: ps for ps in workload.obj.pod_sets}
    out: dict[str, TopologyAssignment] = {}
    for move in moves:
        pod_set, flavor = pod_sets[move.pod_set], snapshot.flavors[move.flavor]
        request = request_for(flavor, pod_set, move.count)
        assert request is not None
        outcome = place(snapshot.topology, flavor, pod_set, move.count, request, ignore, move.keep)
        if isinstance(outcome, Unplaced):
            return outcome
        out[move.pod_set] = outcome
    return out


def _candidates(snapshot: Snapshot, workload: WorkloadInfo) -> list[WorkloadInfo]:
    """Strictly lower priorities holding placed pods: the lowest, then the newest, first."""
    found = [
        info
        for cq in snapshot.cluster_queues.values()
        for info in cq.workloads.values()
        if info.priority < workload.priority and info.key != workload.key and placements_of(info)
    ]
    return sorted(found, key=lambda i: (i.priority, -i.queue_time, i.key))


def _fewest(
    snapshot: Snapshot, workload: WorkloadInfo, moves: Sequence[_Move], victims: list[WorkloadInfo]
) -> list[WorkloadInfo]:
    """Drop victims the recovery does not need, the highest priority first."""
    kept = list(victims)
    for candidate in reversed(victims):
        trial = [v for v in kept if v is not candidate]
        if not isinstance(_replace(snapshot, workload, moves, trial), Unplaced):
            kept = trial
    return kept


def _targets(
    workload: WorkloadInfo, victims: Sequence[WorkloadInfo], moves: Sequence[_Move]
) -> tuple[Target, ...]:
    domains = ", ".join(sorted({d for m in moves for d in m.failed_domains}))
    description = f"hot-swap: recovering workload {workload.key} after the failure of {domains}"
    return tuple(Target(v, HOT_SWAP_REASON, description) for v in victims)


@hookimpl(trylast=True)
def kq_register_hot_swap_policies(register: Register) -> None:
    register(SliceHotSwap)
