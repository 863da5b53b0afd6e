"""Workload: pod sets with their per-pod requests, queue, priority, conditions and admission."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kq.api.conditions import Condition, find, is_true, parse_conditions
from kq.api.invalid import Invalid, ParseError
from kq.api.podrequests import (
    PodResources,
    has_limits,
    parse_pod_resources,
    requests_above_limits,
    requests_of,
)
from kq.api.quantity import QuantityError, to_amount
from kq.api.selectors import (
    NO_NODE_CONSTRAINTS,
    NodeConstraints,
    Toleration,
    parse_node_constraints,
    parse_tolerations,
)
from kq.api.timestamps import parse_time
from kq.api.topology import (
    EXCLUSIVE_TOPOLOGY,
    TopologyAssignment,
    TopologyRequest,
    parse_topology_assignment,
    parse_topology_request,
)
from kq.frozen import quick_init

QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
PREEMPTED = "Preempted"
FINISHED = "Finished"
REQUEUED = "Requeued"

# ``QuotaReserved=False`` reasons the scheduler gives a head that gets no flavor, mildest first
# (``kq.scheduler.modes.severity``), and a workload no cycle has tried (``kq.scheduler.held``).
WAITING_FOR_QUOTA = "WaitingForQuota"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
PENDING_EVALUATION = "PendingEvaluation"
WAITING_REASONS = frozenset(
    {"Pending", PENDING_EVALUATION, WAITING_FOR_QUOTA, EXCEEDS_MAX_QUOTA, NO_MATCHING_FLAVOR}
)
"""Reasons that say a queued workload waits for room: those above, and the scheduler's
``Pending`` (no placement)."""

UNTRUSTED_ADMISSION = "AdmissionNotTrusted"
"""kq's eviction reason for a ``status.admission`` it could not have written."""
REQUEUE_AT_ONCE = frozenset({"Preempted", "NodeFailures", UNTRUSTED_ADMISSION})
"""Eviction reasons after which the Workload is requeued at once (``Requeued=True``); after
any other, a back-off or a person decides."""


@dataclass(frozen=True, slots=True)
class PodSet:
    name: str
    count: int
    requests: Mapping[str, int]
    """Per-pod requests in Kueue units (cpu in millicores)."""
    min_count: int | None = None
    tolerations: tuple[Toleration, ...] = ()
    node_constraints: NodeConstraints = NO_NODE_CONSTRAINTS
    priority_class_name: str | None = None
    resources: PodResources = field(default=PodResources(), compare=False, repr=False)
    """Its containers' requests and limits as written: LimitRange defaults start from these."""
    invalid_resources: tuple[str, ...] = ()
    """Containers whose requests exceed their limits, as Kueue's field errors."""
    outside_limit_range: tuple[str, ...] = ()
    """Containers or pods outside their namespace's LimitRange bounds."""
    topology: TopologyRequest | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    name: str
    flavors: Mapping[str, str]
    resource_usage: Mapping[str, int]
    count: int
    topology: TopologyAssignment | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class Admission:
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class Workload:
    namespace: str
    name: str
    uid: str
    pod_sets: tuple[PodSet, ...]
    queue_name: str
    priority: int = 0
    priority_class_name: str | None = None
    active: bool = True
    creation_time: float = 0.0
    labels: Mapping[str, str] = field(default_factory=dict)
    conditions: tuple[Condition, ...] = ()
    admission: Admission | None = None
    reclaimable_pods: Mapping[str, int] = field(default_factory=dict)
    priority_class_source: str = ""
    """Where the priority came from: a WorkloadPriorityClass, a pod PriorityClass, or ``""``."""
    priority_boost: int = 0
    """``kueue.x-k8s.io/priority-boost`` when honoured (``kq.api.priority.priority_boost``):
    the feed sets it, so that ordering and preemption weigh ``priority + priority_boost``."""
    key: str = field(init=False, repr=False, compare=False)
    """``namespace/name``, computed once: it is looked up on every queue and cache operation."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")

    @property
    def is_finished(self) -> bool:
        return is_true(self.conditions, FINISHED)

    @property
    def has_quota_reservation(self) -> bool:
        return self.admission is not None and is_true(self.conditions, QUOTA_RESERVED)

    @property
    def awaiting_requeue(self) -> bool:
        """``Requeued=False``: evicted and backing off; it may not enter the active heap."""
        requeued = find(self.conditions, REQUEUED)
        return requeued is not None and not requeued.is_true

    @property
    def says_it_waits(self) -> bool:
        """Its status says it waits for room, from a try or a parked head, since it was last
        evicted (an eviction's words say why it stopped, not why it waits)."""
        reserved = find(self.conditions, QUOTA_RESERVED)
        return (
            reserved is not None
            and reserved.status == "False"
            and reserved.reason in WAITING_REASONS
            and not is_true(self.conditions, EVICTED)
        )

    @property
    def is_admitted(self) -> bool:
        return is_true(self.conditions, ADMITTED)

    def with_admission(
        self, admission: Admission | None, conditions: tuple[Condition, ...]
    ) -> Workload:
        """A copy carrying a new admission and conditions (faster than ``dataclasses.replace``)."""
        return Workload(
            self.namespace,
            self.name,
            self.uid,
            self.pod_sets,
            self.queue_name,
            self.priority,
            self.priority_class_name,
            self.active,
            self.creation_time,
            self.labels,
            conditions,
            admission,
            self.reclaimable_pods,
            self.priority_class_source,
            self.priority_boost,
        )

    def queue_order_time(self, eviction_timestamp: bool = True) -> float:
        """Creation time, or the eviction time for PodsReady-timeout/admission-check evictions."""
        evicted = find(self.conditions, EVICTED)
        if (
            eviction_timestamp
            and evicted is not None
            and evicted.is_true
            and evicted.reason in ("PodsReadyTimeout", "AdmissionCheck")
            and evicted.last_transition_time is not None
        ):
            return evicted.last_transition_time
        return self.creation_time


def _pod_set(raw: Mapping[str, Any], index: int, exclusive: str | None) -> PodSet:
    template = raw.get("template") or {}
    spec = template.get("spec") or {}
    count = int(raw.get("count", 1))
    min_count = raw.get("minCount")
    if count < 0 or (min_count is not None and not 0 <= int(min_count) <= count):
        raise ParseError(f"podSets[{index}]: count/minCount out of range")
    resources = parse_pod_resources(spec)
    return PodSet(
        name=str(raw.get("name") or "main"),
        count=count,
        requests=requests_of(resources),
        min_count=None if min_count is None else int(min_count),
        tolerations=parse_tolerations(spec.get("tolerations")),
        node_constraints=parse_node_constraints(spec),
        priority_class_name=spec.get("priorityClassName"),
        resources=resources,
        invalid_resources=(
            requests_above_limits(resources, pod_spec_path(index)) if has_limits(resources) else ()
        ),
        topology=parse_topology_request(
            raw.get("topologyRequest"),
            (template.get("metadata") or {}).get("annotations") or {},
            count,
            exclusive,
        ),
    )


def pod_spec_path(index: int) -> str:
    return f"spec.podSets[{index}].template.spec"


def _admission(raw: Mapping[str, Any] | None) -> Admission | None:
    if not raw:
        return None
    assignments = []
    for psa in raw.get("podSetAssignments") or ():
        usage = psa.get("resourceUsage") or {}
        assignments.append(
            PodSetAssignment(
                name=str(psa.get("name", "main")),
                flavors={str(k): str(v) for k, v in (psa.get("flavors") or {}).items()},
                resource_usage={str(k): to_amount(str(k), v) for k, v in usage.items()},
                count=int(psa.get("count", 0)),
                topology=parse_topology_assignment(psa.get("topologyAssignment")),
            )
        )
    return Admission(str(raw.get("clusterQueue", "")), tuple(assignments))


# PodSets parsed per (uid, generation): status writes, most of a Workload's events, leave
# the spec alone, and parsing pod templates' quantities is the costly part of an event.
_POD_SETS: OrderedDict[tuple[str, int], tuple[PodSet, ...]] = OrderedDict()
_POD_SETS_KEPT = 50_000


def _pod_sets(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[PodSet, ...]:
    uid, generation = meta.get("uid"), meta.get("generation")
    key = (str(uid), int(generation)) if uid and isinstance(generation, int) else None
    if key is not None and key in _POD_SETS:
        _POD_SETS.move_to_end(key)
        return _POD_SETS[key]
    exclusive = (meta.get("annotations") or {}).get(EXCLUSIVE_TOPOLOGY)
    pod_sets = tuple(_pod_set(ps, i, exclusive) for i, ps in enumerate(spec.get("podSets") or ()))
    if not pod_sets:
        raise ParseError("spec.podSets: Required value")
    if sum(ps.min_count is not None for ps in pod_sets) > 1:
        raise ParseError("spec.podSets: at most one podSet can use minCount")
    if key is not None:
        _POD_SETS[key] = pod_sets
        if len(_POD_SETS) > _POD_SETS_KEPT:
            _POD_SETS.popitem(last=False)
    return pod_sets


def parse_workload(obj: Mapping[str, Any]) -> Workload | Invalid:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    try:
        pod_sets = _pod_sets(meta, spec)
        reclaimable = {str(r["name"]): int(r["count"]) for r in status.get("reclaimablePods") or ()}
        return Workload(
            namespace=str(meta.get("namespace", "default")),
            name=name,
            uid=str(meta.get("uid", "")),
            pod_sets=pod_sets,
            queue_name=str(spec.get("queueName", "")),
            priority=int(spec.get("priority") or 0),
            priority_class_name=spec.get("priorityClassName"),
            active=spec.get("active", True) is not False,
            creation_time=parse_time(meta.get("creationTimestamp")) or 0.0,
            labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
            conditions=parse_conditions(status.get("conditions")),
            admission=_admission(status.get("admission")),
            reclaimable_pods=reclaimable,
            priority_class_source=str(spec.get("priorityClassSource") or ""),
        )
    except (KeyError, TypeError, ValueError, QuantityError, ParseError) as error:
        return Invalid("Workload", name, "InvalidSpec", f"invalid spec: {error}")
