"""Kueue's workload series, fed from cycles, confirmed writes and the Workload watch.

Counters move only once the API server accepted the write (or the watch showed the
transition), so a dashboard never counts an admission that was forgotten after a conflict.
Queue, cohort and LocalQueue gauges live in ``kq.controllers.queue_metrics``.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kq.api.timestamps import parse_time
from kq.config import KqConfig
from kq.controllers.feed import CoreFeed
from kq.observability import lq_metrics, metrics
from kq.observability.metric_options import enable, role, state
from kq.runtime.manager import Manager
from kq.runtime.resources import WORKLOADS
from kq.runtime.store import Change, EventType, object_key
from kq.scheduler.cycle import NO_LONGER_FITS, OVERLAPPING_TARGETS, CycleResult
from kq.scheduler.decisions import Pending

SUCCESS = "success"
INADMISSIBLE = "inadmissible"
Object = Mapping[str, Any]
SEEN_EVICTIONS = 100_000
"""Bound on the (workload, reason, cause) triples remembered for ``evicted_workloads_once``."""


def cycle(result: CycleResult, seconds: float) -> None:
    """One attempt per cycle that had heads, as Kueue's scheduler counts them."""
    if not result.decisions:
        return
    outcome = SUCCESS if result.admitted else INADMISSIBLE
    metrics.admission_attempts_total.labels(outcome, role()).inc()
    metrics.admission_attempt_duration_seconds.labels(outcome, role()).observe(seconds)
    for cq, count in preemption_skips(result).items():
        metrics.admission_cycle_preemption_skips.labels(cq, role()).set(count)


def preemption_skips(result: CycleResult) -> Counter[str]:
    """Per ClusterQueue, heads with preemption candidates that the cycle passed over because
    a head decided before it claimed the same victims or the room it needed, as Kueue counts
    them (only ClusterQueues with such a head are reported)."""
    skips: Counter[str] = Counter()
    for decision in result.decisions:
        if not isinstance(decision, Pending):
            continue
        assignment = result.assignments.get(decision.key)
        preempting = assignment is not None and assignment.needs_preemption
        if decision.message == OVERLAPPING_TARGETS or (
            decision.message == NO_LONGER_FITS and preempting
        ):
            skips[decision.cluster_queue] += 1
    return skips


def priority_class(obj: Object) -> str:
    return str((obj.get("spec") or {}).get("priorityClassName") or "")


def _local_queue(obj: Object) -> tuple[str, str]:
    name = str((obj.get("spec") or {}).get("queueName") or "")
    return name, str(obj["metadata"].get("namespace", ""))


def _condition(obj: Object, type_: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return None


def _true_since(obj: Object, type_: str) -> float | None:
    cond = _condition(obj, type_)
    if cond is None or cond.get("status") != "True":
        return None
    return parse_time(cond.get("lastTransitionTime"))


def queued_since(obj: Object) -> float:
    """Creation, or the last requeue: where Kueue's wait times start."""
    created = parse_time(obj["metadata"].get("creationTimestamp")) or time.time()
    requeued = _true_since(obj, "Requeued")
    return max(created, requeued or 0.0)


def _lq_on() -> bool:
    return state.local_queues


def quota_reserved(
    obj: Object, cq: str, waited: float, admitted: bool, cohorts: Iterable[str]
) -> None:
    """Quota reserved (and admitted too when no check stands between)."""
    pc, lq = priority_class(obj), _local_queue(obj)
    metrics.quota_reserved_workloads_total.labels(cq, pc, role()).inc()
    metrics.quota_reserved_wait_time_seconds.labels(cq, pc, role()).observe(waited)
    if _lq_on():
        lq_metrics.quota_reserved_workloads_total.labels(*lq, pc, role()).inc()
        lq_metrics.quota_reserved_wait_time_seconds.labels(*lq, pc, role()).observe(waited)
    if admitted:
        _admitted(obj, cq, waited, cohorts)


def admitted_after_checks(obj: Object, cq: str, checks_wait: float, cohorts: Iterable[str]) -> None:
    """The last check turned Ready: admitted, ``checks_wait`` seconds after reservation."""
    pc, lq = priority_class(obj), _local_queue(obj)
    metrics.admission_checks_wait_time_seconds.labels(cq, pc, role()).observe(checks_wait)
    if _lq_on():
        lq_metrics.admission_checks_wait_time_seconds.labels(*lq, pc, role()).observe(checks_wait)
    _admitted(obj, cq, max(0.0, time.time() - queued_since(obj)), cohorts)


def _admitted(obj: Object, cq: str, waited: float, cohorts: Iterable[str]) -> None:
    pc, lq = priority_class(obj), _local_queue(obj)
    metrics.admitted_workloads_total.labels(cq, pc, role()).inc()
    metrics.admission_wait_time_seconds.labels(cq, pc, role()).observe(waited)
    for cohort in cohorts:
        metrics.cohort_subtree_admitted_workloads_total.labels(cohort, pc, role()).inc()
    if _lq_on():
        lq_metrics.admitted_workloads_total.labels(*lq, pc, role()).inc()
        lq_metrics.admission_wait_time_seconds.labels(*lq, pc, role()).observe(waited)


def gate_removed(gate: str, obj: Object, is_group: bool) -> None:
    """A pod's scheduling gate removed: seconds since its Workload was admitted."""
    cq, admitted = _admitted_queue(obj), _true_since(obj, "Admitted")
    if not cq or admitted is None:
        return
    seconds = max(0.0, time.time() - admitted)
    row = (gate, cq, str(is_group).lower(), role())
    metrics.pod_scheduling_gate_removal_seconds.labels(*row).observe(seconds)


class Evictions:
    """Eviction counters; remembers which (workload, reason, cause) it has counted once."""

    def __init__(self) -> None:
        self._seen: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    def evicted(self, obj: Object, cq: str, reason: str, cause: str = "") -> None:
        pc, lq = priority_class(obj), _local_queue(obj)
        metrics.evicted_workloads_total.labels(cq, reason, cause, pc, role()).inc()
        if _lq_on():
            lq_metrics.evicted_workloads_total.labels(*lq, reason, cause, pc, role()).inc()
        seen = (str(obj["metadata"].get("uid") or object_key(dict(obj))), reason, cause)
        if seen not in self._seen:
            self._seen[seen] = None
            if len(self._seen) > SEEN_EVICTIONS:
                self._seen.popitem(last=False)
            metrics.evicted_workloads_once_total.labels(cq, reason, cause, pc, role()).inc()
        ready = _true_since(obj, "PodsReady")
        if ready is not None:
            seconds = max(0.0, time.time() - ready)
            metrics.pods_ready_to_evicted_time_seconds.labels(cq, reason, cause, role()).observe(
                seconds
            )

    def preempted(
        self, victim: Object, victim_queue: str, preempting_queue: str, reason: str
    ) -> None:
        self.evicted(victim, victim_queue, "Preempted")
        metrics.preempted_workloads_total.labels(preempting_queue, reason, role()).inc()


EVICTIONS = Evictions()
"""One per process: the leader counts, whichever controller wrote the eviction."""


def split_reason(reason: str) -> tuple[str, str]:
    """Kueue's reason label and underlying cause from an ``Evicted`` reason such as
    ``DeactivatedDueToRequeuingLimitExceeded``."""
    head, sep, cause = reason.partition("DueTo")
    return (head, cause) if sep and head == "Deactivated" else (reason, "")


class WorkloadTransitions:
    """Series Kueue moves on a Workload's status transitions, read from the watch: finished,
    pods ready, quota released after an eviction. It also keeps which finished Workloads
    exist, per ClusterQueue and LocalQueue, for the ``finished_workloads`` gauges."""

    def __init__(self) -> None:
        self.is_leader: Callable[[], bool] = lambda: False
        self.finished: dict[str, tuple[str, tuple[str, str]]] = {}
        """Finished workloads: key to (ClusterQueue, LocalQueue)."""

    def __call__(self, change: Change) -> None:
        key = object_key(change.obj)
        if change.type is EventType.DELETED:
            self.finished.pop(key, None)
            return
        new, old = change.obj, change.old or {}
        finished = _true_since(new, "Finished") is not None
        if finished:
            self.finished[key] = (_admitted_queue(new), _local_queue(new))
        else:
            self.finished.pop(key, None)  # its Finished condition was taken back
        if change.old is None or not self.is_leader():
            return  # a (re)list replays what is, not what happened
        if finished and _true_since(old, "Finished") is None:
            self._finished(new)
        if _true_since(new, "PodsReady") is not None and _true_since(old, "PodsReady") is None:
            self._ready(new)
        if _admitted_queue(old) and not _admitted_queue(new):
            self._released(new, _admitted_queue(old))

    def _finished(self, obj: Object) -> None:
        cq, pc = _admitted_queue(obj), priority_class(obj)
        if not cq:
            return
        metrics.finished_workloads_total.labels(cq, pc, role()).inc()
        if _lq_on():
            lq_metrics.finished_workloads_total.labels(*_local_queue(obj), pc, role()).inc()

    def _ready(self, obj: Object) -> None:
        cq, pc, lq = _admitted_queue(obj), priority_class(obj), _local_queue(obj)
        admitted = _true_since(obj, "Admitted")
        if not cq or admitted is None:
            return
        now = time.time()
        queued = max(0.0, now - queued_since(obj))
        since_admission = max(0.0, now - admitted)
        metrics.ready_wait_time_seconds.labels(cq, pc, role()).observe(queued)
        metrics.admitted_until_ready_wait_time_seconds.labels(cq, pc, role()).observe(
            since_admission
        )
        if _lq_on():
            lq_metrics.ready_wait_time_seconds.labels(*lq, pc, role()).observe(queued)
            lq_metrics.admitted_until_ready_wait_time_seconds.labels(*lq, pc, role()).observe(
                since_admission
            )

    def _released(self, obj: Object, cq: str) -> None:
        evicted = _condition(obj, "Evicted")
        since = _true_since(obj, "Evicted")
        if evicted is None or since is None:
            return
        reason, _ = split_reason(str(evicted.get("reason", "")))
        seconds = max(0.0, time.time() - since)
        metrics.workload_eviction_latency_seconds.labels(cq, reason, role()).observe(seconds)


def _admitted_queue(obj: Object) -> str:
    admission = (obj.get("status") or {}).get("admission") or {}
    return str(admission.get("clusterQueue") or "")


TRANSITIONS = WorkloadTransitions()
"""One per process, fed by the Workload informer every replica runs."""


def cohorts_above(feed: CoreFeed, cq: str) -> list[str]:
    """The cohorts from ``cq``'s parent up to its root."""
    node = feed.cache.tree().cluster_queues.get(cq)
    out = []
    parent = node.parent if node is not None else None
    while parent is not None:
        out.append(parent.name)
        parent = parent.parent
    return out


class _Ancestry:
    """The leader's core, for callers without one (the workload lifecycle) to name the
    cohorts above a ClusterQueue; none until the admission controller starts."""

    feed: CoreFeed | None = None

    def of(self, cq: str) -> list[str]:
        return [] if self.feed is None else cohorts_above(self.feed, cq)


ANCESTRY = _Ancestry()


def register_metrics(manager: Manager, config: KqConfig) -> None:
    """Register the optional series the configuration asks for and watch Workloads'
    transitions; counters move only while this replica leads."""
    enable(
        local_queues=config.local_queue_metrics,
        cluster_queue_resources=config.cluster_queue_resource_metrics,
    )
    TRANSITIONS.is_leader = manager.is_leading
    manager.informer(WORKLOADS).add_handler(TRANSITIONS)
