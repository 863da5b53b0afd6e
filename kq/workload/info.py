"""What the queues and the scheduler need of a Workload, computed once per object version."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Final

from kq.api.conditions import find
from kq.api.interning import flavor_resource
from kq.api.quotas import FlavorResource
from kq.api.workload import EVICTED, QUOTA_RESERVED, REQUEUED, Admission, Workload


class Shape:
    """A scheduling shape with its hash computed once: the queues key several maps by it on
    every push and pop, and hashing the parts anew walks the pod sets' selector dataclasses
    each time (mode A made 635,000 dataclass ``__hash__`` and 287,000 ``__eq__`` calls)."""

    __slots__ = ("_hash", "parts")

    def __init__(self, parts: tuple[Hashable, ...]) -> None:
        self.parts = parts
        self._hash = hash(parts)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Shape):
            return NotImplemented
        return self._hash == other._hash and self.parts == other.parts

    def __repr__(self) -> str:
        return f"Shape{self.parts!r}"


@dataclass(init=False, slots=True)
class WorkloadInfo:
    """A Workload with its queue-order key and (when it holds quota) its usage per flavor."""

    obj: Final[Workload]
    cluster_queue: Final[str]
    queue_time: Final[float]
    usage: Final[Mapping[FlavorResource, int]]
    # Derived from ``obj``, so left out of equality, repr and ``dataclasses.replace``.
    key: str = field(init=False, repr=False, compare=False)
    priority: int = field(init=False, repr=False, compare=False)
    """The effective priority, ``spec.priority`` plus the boost: what ordering and preemption
    compare (Kueue's ``EffectivePriority``), summed once here rather than per comparison."""
    shape: Shape = field(init=False, repr=False, compare=False)
    """What decides whether it fits, as Kueue's scheduling equivalence hash: workloads of one
    shape in one ClusterQueue fit or fail together."""
    _reservation: tuple[bool, float | None] | None = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        obj: Workload,
        cluster_queue: str = "",
        queue_time: float = 0.0,
        usage: Mapping[FlavorResource, int] | None = None,
        shape: Shape | None = None,
    ) -> None:
        self.obj = obj
        self.cluster_queue = cluster_queue
        self.queue_time = queue_time
        self.usage = {} if usage is None else usage
        self.key = obj.key
        self.priority = obj.priority + obj.priority_boost
        self.shape = scheduling_shape(obj) if shape is None else shape  # known by with_obj
        self._reservation = None

    def reservation(self) -> tuple[bool, float | None]:
        """Whether it is evicted, and when its quota was reserved (``None``: not reserved).
        Preemption orders candidates by these on every try, so they are read once."""
        facts = self._reservation
        if facts is None:
            evicted = find(self.obj.conditions, EVICTED)
            reserved = find(self.obj.conditions, QUOTA_RESERVED)
            at = None if reserved is None else reserved.last_transition_time
            facts = self._reservation = (evicted is not None and evicted.is_true, at)
        return facts

    def order_key(self) -> tuple[int, float, str]:
        """Heap order: higher priority, then older queue time, then UID (name if none)."""
        return (-self.priority, self.queue_time, self.obj.uid or self.obj.key)


def with_obj(
    info: WorkloadInfo, obj: Workload, usage: Mapping[FlavorResource, int]
) -> WorkloadInfo:
    """``info`` for a newer version of its workload (as the scheduler admits it) holding
    ``usage``: the shape is carried over when nothing it is made of changed."""
    old = info.obj
    same = (
        obj.pod_sets is old.pod_sets
        and obj.priority == old.priority
        and obj.priority_boost == old.priority_boost
        and obj.reclaimable_pods is old.reclaimable_pods
    )
    shape = info.shape if same else None
    return WorkloadInfo(obj, info.cluster_queue, info.queue_time, usage, shape)


_interned: dict[tuple[Hashable, ...], Shape] = {}
_INTERNED_MAX = 4096
"""Shapes are few; one object per shape lets the queues' maps match by identity, not by
comparing pod sets. Past the bound the table starts over: equal shapes still compare equal."""


def scheduling_shape(workload: Workload) -> Shape:
    """Effective priority and, per pod set, its effective count, requests and node constraints."""
    parts = _shape_parts(workload)
    shape = _interned.get(parts)
    if shape is None:
        if len(_interned) >= _INTERNED_MAX:
            _interned.clear()
        shape = _interned[parts] = Shape(parts)
    return shape


def _shape_parts(workload: Workload) -> tuple[Hashable, ...]:
    reclaimable = workload.reclaimable_pods
    return (
        workload.priority + workload.priority_boost,
        *(
            (
                ps.name,
                ps.count - reclaimable.get(ps.name, 0),
                ps.min_count,
                tuple(sorted(ps.requests.items())),
                ps.tolerations,
                ps.node_constraints,
                ps.priority_class_name,
                ps.invalid_resources,
                ps.outside_limit_range,
                ps.topology,
            )
            for ps in workload.pod_sets
        ),
    )


def same_for_queueing(old: WorkloadInfo, new: WorkloadInfo) -> bool:
    """Whether an update leaves a parked workload as (in)admissible as before: our own pending
    words, for one, must not send it back to be tried again, as upstream keeps it parked."""
    a, b = old.obj, new.obj
    return (
        old.shape == new.shape
        and old.queue_time == new.queue_time
        and a.queue_name == b.queue_name
        and a.active == b.active
        and a.labels == b.labels  # a veto plugin may read them
        and find(a.conditions, EVICTED) == find(b.conditions, EVICTED)
        and find(a.conditions, REQUEUED) == find(b.conditions, REQUEUED)
    )


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
            fr = flavor_resource(flavor, resource)
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
