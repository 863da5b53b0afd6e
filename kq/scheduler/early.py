"""Early release: a parked shape whose head now fits its ClusterQueue's own unused quota.

Parked workloads are retried once per requeue period (``kq.queue.pacing``), as Kueue does, so
that heads needing to borrow or preempt are not tried at every release. Alone, that leaves
quota idle: a workload shorter than the period frees room that nobody takes until the period
ends (Kueue's baseline mix, 200 ms workloads: 40 % of nominal quota in use, 165 s wall against
95 s retrying at once). A head that fits in what is left of its own ClusterQueue's nominal
quota borrows nothing, so no owner reclaims it, and preempts nobody, so its shape is released
at the release that made the room. The check is by resource, not by resource group, so it may
pass a head that then fails; such a shape waits for the period, once per period.
"""

from __future__ import annotations

from collections.abc import Iterable

from kq.cache.cache import Cache
from kq.queue.manager import QueueManager
from kq.workload.info import Shape


def release_fitting(cache: Cache, queues: QueueManager, cluster_queues: Iterable[str]) -> None:
    """Release, in each of ``cluster_queues``, the parked shapes whose heads fit unborrowed,
    together, taken in queue order: room for one head releases one shape, not all."""
    for cq in cluster_queues:
        heads = queues.early_candidates(cq)
        if not heads:
            continue
        fitting: list[Shape] = []
        claimed: dict[str, int] = {}
        for head in heads:
            together = dict(claimed)
            for resource, amount in queues.requests_of(head.key).items():
                together[resource] = together.get(resource, 0) + amount
            pods = sum(pod_set.count for pod_set in head.obj.pod_sets)
            together["pods"] = together.get("pods", 0) + pods  # counted where covered
            if cache.fits_unborrowed(cq, together):
                fitting.append(head.shape)
                claimed = together
        if fitting:
            queues.release_shapes(cq, fitting)
