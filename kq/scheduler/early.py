"""Early release: a parked shape whose head now fits its ClusterQueue's own unused quota.

Parked workloads are retried once per requeue period (``kq.queue.pacing``), as Kueue does, so
that heads needing to borrow or preempt are not tried at every release. Alone, that leaves
quota idle: a workload shorter than the period frees room that nobody takes until the period
ends (Kueue's baseline mix, 200 ms workloads: 40 % of nominal quota in use, 165 s wall against
95 s retrying at once). A head that fits in what is left of its own ClusterQueue's nominal
quota borrows nothing, so no owner reclaims it, and preempts nobody, so its shape is released
at the release that made the room. The check is by resource, not by resource group, so it may
pass a head that then fails; such a shape waits for the period, once per period.

A head that does not fit holds back the heads its queue lets it preempt (lower priority, and
newer equal priority under ``LowerOrNewerEqualPriority``): admitted early into the room it
waits for, they would be evicted when it is retried.
"""

from __future__ import annotations

from collections.abc import Iterable

from kq.api.clusterqueue import ClusterQueue
from kq.cache.cache import Cache
from kq.queue.manager import QueueManager
from kq.workload.info import Shape, WorkloadInfo

_NOBODY = -(2**63)


def release_fitting(cache: Cache, queues: QueueManager, cluster_queues: Iterable[str]) -> None:
    """Release, in each of ``cluster_queues``, the parked shapes whose heads fit unborrowed,
    together, taken in queue order: room for one head releases one shape, not all."""
    for cq in cluster_queues:
        heads = queues.early_candidates(cq)
        if not heads:
            continue
        spec = cache.cluster_queues.get(cq)
        fitting: list[Shape] = []
        claimed: dict[str, int] = {}
        held_below = _NOBODY  # heads under this priority may be preempted by one that waits
        for head, releasable in heads:
            if head.priority < held_below:
                continue
            if not releasable:  # its early try failed: it waits for the period, and holds
                held_below = max(held_below, _holds_below(spec, head))
                continue
            together = dict(claimed)
            for resource, amount in queues.requests_of(head.key).items():
                together[resource] = together.get(resource, 0) + amount
            pods = sum(pod_set.count for pod_set in head.obj.pod_sets)
            together["pods"] = together.get("pods", 0) + pods  # counted where covered
            if cache.fits_unborrowed(cq, together):
                fitting.append(head.shape)
                claimed = together
            else:
                held_below = max(held_below, _holds_below(spec, head))
        if fitting:
            queues.release_shapes(cq, fitting)


def _holds_below(spec: ClusterQueue | None, waiting: WorkloadInfo) -> int:
    """Heads of priority under the returned one may be preempted by ``waiting`` in its queue."""
    policy = "Never" if spec is None else spec.preemption.within_cluster_queue
    if policy == "LowerPriority":
        return waiting.priority
    if policy == "LowerOrNewerEqualPriority":
        return waiting.priority + 1  # heads after it in queue order are the newer ones
    return _NOBODY
