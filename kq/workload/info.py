"""What the queues and the scheduler need of a Workload, computed once per object version."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kq.api.quotas import FlavorResource
from kq.api.workload import Admission, Workload


@dataclass(frozen=True, slots=True)
class WorkloadInfo:
    """A Workload with its queue-order key and (when it holds quota) its usage per flavor."""

    obj: Workload
    cluster_queue: str = ""
    queue_time: float = 0.0
    usage: Mapping[FlavorResource, int] = field(default_factory=dict)
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", self.obj.key)

    @property
    def priority(self) -> int:
        return self.obj.priority

    def order_key(self) -> tuple[int, float, str]:
        """Heap order: higher priority, then older queue time, then UID (name if none)."""
        return (-self.obj.priority, self.queue_time, self.obj.uid or self.obj.key)


def admission_usage(workload: Workload, admission: Admission) -> dict[FlavorResource, int]:
    """Quota held by an admission, scaled down by the pods already reclaimable."""
    usage: dict[FlavorResource, int] = {}
    for psa in admission.pod_set_assignments:
        reclaimable = workload.reclaimable_pods.get(psa.name, 0)
        for resource, total in psa.resource_usage.items():
            flavor = psa.flavors.get(resource)
            if flavor is None or total == 0:
                continue
            amount = total
            if reclaimable and psa.count:
                amount = total // psa.count * max(0, psa.count - reclaimable)
            fr = (flavor, resource)
            usage[fr] = usage.get(fr, 0) + amount
    return usage


def new_info(
    workload: Workload, cluster_queue: str, eviction_timestamp: bool = True
) -> WorkloadInfo:
    """Info for a Workload; usage is filled when it carries an admission."""
    usage = admission_usage(workload, workload.admission) if workload.admission else {}
    return WorkloadInfo(
        workload, cluster_queue, workload.queue_order_time(eviction_timestamp), usage
    )
