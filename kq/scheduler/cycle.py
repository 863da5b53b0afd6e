"""One scheduling cycle: nominate every head, order the entries, then admit, preempt or wait.

Pure: a snapshot and the heads go in, decisions come out; the snapshot's usage is updated as
entries are admitted so later entries see the quota taken earlier in the same cycle.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry import trace

from kq.api.quotas import FlavorResource
from kq.api.workload import Admission, PodSetAssignment
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.queue.requeue import RequeueReason
from kq.scheduler.assignment import (
    Assignment,
    assign_flavors,
    assign_partially,
)
from kq.scheduler.decisions import Admit, Decision, Pending, Preempt
from kq.scheduler.fair_order import fair_order
from kq.scheduler.modes import Mode
from kq.scheduler.placement import Unplaced
from kq.scheduler.plugins import AdmissionPlugins
from kq.scheduler.protocols import Target
from kq.scheduler.topology_fit import Placed, place_workload
from kq.scheduler.victims import victim
from kq.workload.info import WorkloadInfo
from kq.workload.resources import resources_error

tracer = trace.get_tracer("kq.scheduler")

NO_LONGER_FITS = "Workload no longer fits after processing another workload"
OVERLAPPING_TARGETS = "Workload has overlapping preemption targets with another workload"
PASSING_WORDS = frozenset({NO_LONGER_FITS, OVERLAPPING_TARGETS})
"""Why a head that fitted did not get in this cycle: another head took what it needed first."""


@dataclass(slots=True)
class Entry:
    """A nominated head: its flavor assignment and, if it must preempt, its victims."""

    info: WorkloadInfo
    cq: ClusterQueueSnapshot
    assignment: Assignment
    targets: Sequence[Target] = ()
    preemptor: bool = False
    """Its ClusterQueue's head that issued preemptions and waits for them to complete."""

    def order_key(self) -> tuple[bool, int, int, float, str]:
        """Preemptors first (Kueue's PrioritizePreemptorWorkloads), then less borrowing, then
        higher priority, then FIFO (semantics §3.4). A preemptor that went after another
        queue's entry could find the quota its victims freed taken, preempt that entry back
        once its priority allows, and so on: the thrash of Kueue#13662."""
        return (
            not self.preemptor,
            self.assignment.borrowing,
            -self.info.priority,
            self.info.queue_time,
            self.info.obj.uid,
        )


@dataclass(frozen=True)
class CycleResult:
    """Every head's decision, in processing order; ``entries`` heads got as far as nomination."""

    decisions: tuple[Decision, ...]
    entries: int
    admitted: int = 0
    by_key: Mapping[str, Decision] = field(default_factory=dict)
    held: tuple[Pending, ...] = ()
    """Words for workloads no cycle looks at: queued behind a head that blocks its queue, or in
    a parked shape (``kq.scheduler.held``); not heads, so not in ``decisions``, which observers
    and metrics count."""
    assignments: Mapping[str, Assignment] = field(default_factory=dict)
    """The flavor assignment each nominated head was decided on (what its span records)."""
    trace_id: str = ""
    """The cycle span's trace id (hex) when spans are recorded: the decisions' trace."""


class _Oracle:
    """Preemption simulation for one FR; remembers its last answer so ``nominate`` can reuse it."""

    __slots__ = ("cq", "info", "last", "preemptor", "snapshot")  # one per head: no __dict__

    def __init__(
        self,
        plugins: AdmissionPlugins,
        snapshot: Snapshot,
        cq: ClusterQueueSnapshot,
        info: WorkloadInfo,
    ) -> None:
        self.snapshot, self.cq, self.info = snapshot, cq, info
        self.preemptor = plugins.preemptor_for(cq.spec)
        self.last: tuple[dict[FlavorResource, int], Sequence[Target]] | None = None

    def __call__(self, fr: FlavorResource, value: int) -> tuple[Mode, int]:
        snapshot, cq = self.snapshot, self.cq
        usage = {fr: value}
        targets = self.preemptor.targets(snapshot, cq, self.info, usage)
        self.last = (usage, targets)
        if not targets:
            return Mode.NO_CANDIDATES, snapshot.usage.borrowing_height(cq.node, fr, value)[0]
        for target in targets:
            snapshot.remove_workload(target.workload)
        borrowing = snapshot.usage.borrowing_height(cq.node, fr, value)[0]
        for target in targets:
            snapshot.restore_workload(target.workload)
        own = any(t.workload.cluster_queue == cq.name for t in targets)
        return (Mode.PREEMPT if own else Mode.RECLAIM), borrowing

    def targets_for(self, usage: Mapping[FlavorResource, int]) -> Sequence[Target]:
        if self.last is not None and self.last[0] == usage:
            return self.last[1]
        return self.preemptor.targets(self.snapshot, self.cq, self.info, usage)


def nominate(
    snapshot: Snapshot,
    info: WorkloadInfo,
    plugins: AdmissionPlugins,
    namespace_labels: Mapping[str, Mapping[str, str]],
) -> Entry | Pending:
    """Flavor assignment and preemption targets for one head, or why it can't be tried."""
    name = info.cluster_queue
    cq = snapshot.cluster_queues.get(name)
    if cq is None:  # it went inactive or away after the heads were popped
        if name in snapshot.inactive:
            message, reason = f"ClusterQueue {name} is inactive", "Suspended"
        else:
            message, reason = f"ClusterQueue {name} not found", "Misconfigured"
        return Pending(info.key, name, reason, message, RequeueReason.INACTIVE)
    selector = cq.spec.namespace_selector
    labels = namespace_labels.get(info.obj.namespace)
    if selector is None or labels is None or not selector.matches(labels):
        return Pending(
            info.key,
            name,
            "Misconfigured",
            "workload namespace doesn't match ClusterQueue selector",
            RequeueReason.NAMESPACE_MISMATCH,
        )
    invalid = resources_error(info.obj)
    if invalid is not None:
        return Pending(info.key, name, "Misconfigured", invalid, RequeueReason.GENERIC)
    if plugins.veto is not None:
        vetoed = plugins.veto(info, cq.spec)
        if vetoed is not None:
            return Pending(info.key, name, "Vetoed", vetoed, RequeueReason.VETOED)
    unknown = plugins.unknown(cq.spec)
    if unknown is not None:  # the runtime keeps such queues inactive; the core stays safe
        return Pending(info.key, name, "Misconfigured", unknown, RequeueReason.INACTIVE)
    terms = None if plugins.terms is None else plugins.terms(info, cq.spec)
    assigner = plugins.assigner_for(cq.spec)
    oracle = _Oracle(plugins, snapshot, cq, info)
    assignment = assign_flavors(snapshot, cq, info, assigner, oracle, None, terms)
    targets: Sequence[Target] = ()
    if assignment.needs_preemption:
        targets = oracle.targets_for(assignment.usage)
    if (
        not assignment.fits
        and not targets
        and any(p.min_count is not None for p in info.obj.pod_sets)
    ):

        def acceptable(candidate: Assignment) -> bool:
            return candidate.fits or (
                candidate.needs_preemption
                and bool(oracle.preemptor.targets(snapshot, cq, info, candidate.usage))
            )

        reduced = assign_partially(snapshot, cq, info, assigner, oracle, acceptable, terms)
        if reduced is not None:
            assignment = reduced
            if reduced.needs_preemption:
                targets = oracle.preemptor.targets(snapshot, cq, info, reduced.usage)
    if terms is not None and terms.borrow_only and assignment.mode is Mode.NO_FIT:
        # Parked alone: its terms are not in its shape, others of the shape may well fit.
        reason, message = assignment.no_fit_reason, assignment.message()
        return Pending(info.key, name, reason, message, RequeueReason.GENERIC)
    return Entry(info, cq, assignment, targets)


def _admission(entry: Entry, placed: Placed) -> Admission:
    return Admission(
        entry.cq.name,
        tuple(
            PodSetAssignment(
                ps.name, dict(ps.flavors), dict(ps.resource_usage), ps.count, placed.get(ps.name)
            )
            for ps in entry.assignment.pod_sets
        ),
    )


class _Claims:
    """Victims claimed earlier in the cycle, kept out of the snapshot until it is dropped.

    Every later fit check must discount them (semantics §3.3); removing them once, instead
    of around each check, gives the same answers at a fraction of the cost.
    """

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.victims: set[str] = set()
        self._usage_by_cq: dict[str, dict[FlavorResource, int]] = {}

    def overlap(self, targets: Sequence[Target]) -> bool:
        return any(t.workload.key in self.victims for t in targets)

    def fits_claiming(self, entry: Entry) -> bool:
        """Whether the entry fits once its own victims leave too; if so they stay claimed."""
        snapshot = self.snapshot
        for target in entry.targets:
            snapshot.remove_workload(target.workload)
        if snapshot.fits(entry.cq, entry.assignment.usage):
            for target in entry.targets:
                self.victims.add(target.workload.key)
                held = self._usage_by_cq.setdefault(target.workload.cluster_queue, {})
                for fr, amount in target.workload.usage.items():
                    held[fr] = held.get(fr, 0) + amount
            return True
        for target in entry.targets:
            snapshot.restore_workload(target.workload)
        return False

    def used(self, cq: ClusterQueueSnapshot, fr: FlavorResource) -> int:
        """Usage with claimed victims still counted: they hold quota until evicted."""
        return self.snapshot.used(cq, fr) + self._usage_by_cq.get(cq.name, {}).get(fr, 0)


def _reserve(snapshot: Snapshot, entry: Entry, claims: _Claims) -> None:
    """Hold back what a head waiting for preemption would take, so others can't take it."""
    cq = entry.cq
    reserved = {}
    for fr, amount in entry.assignment.usage.items():
        used, nominal = claims.used(cq, fr), snapshot.nominal(cq, fr)
        if entry.assignment.borrowing == 0:
            reserved[fr] = max(0, min(amount, nominal - used))
        else:
            limit = snapshot.borrowing_limit(cq, fr)
            reserved[fr] = amount if limit is None else max(0, min(amount, nominal + limit - used))
    snapshot.add_usage(cq, reserved)


def _decide(snapshot: Snapshot, entry: Entry, claims: _Claims) -> Decision:
    info, cq, assignment = entry.info, entry.cq, entry.assignment
    if assignment.mode is Mode.NO_FIT:
        return Pending(
            info.key,
            cq.name,
            assignment.no_fit_reason,
            assignment.message(),
            RequeueReason.NO_FIT,
        )
    if assignment.needs_preemption and not entry.targets:
        # A preemptor keeps its place too: what its victims freed is not for others to take.
        if cq.spec.preemption.reclaim_within_cohort != "Any" or entry.preemptor:
            _reserve(snapshot, entry, claims)
        return Pending(
            info.key,
            cq.name,
            "WaitingForQuota",
            assignment.message(),
            RequeueReason.PREEMPTION_NO_CANDIDATES,
        )
    if entry.targets and claims.overlap(entry.targets):
        return Pending(
            info.key,
            cq.name,
            "WaitingForQuota",
            OVERLAPPING_TARGETS,
            RequeueReason.FAILED_AFTER_NOMINATION,
        )
    if not claims.fits_claiming(entry):
        return Pending(
            info.key,
            cq.name,
            "WaitingForQuota",
            NO_LONGER_FITS,
            RequeueReason.FAILED_AFTER_NOMINATION,
        )
    placed: Placed = {}
    if not entry.targets:
        outcome = place_workload(snapshot, info, assignment)
        if isinstance(outcome, Unplaced):
            return Pending(info.key, cq.name, "Pending", outcome.message, RequeueReason.NO_FIT)
        placed = outcome
    snapshot.add_usage(cq, assignment.usage)
    if entry.targets:
        count = len(entry.targets)
        message = f"{assignment.message()}. Pending the preemption of {count} workload(s)"
        return Preempt(
            info.key, cq.name, tuple(victim(snapshot, info, t) for t in entry.targets), message
        )
    admission = _admission(entry, placed)
    checks = (
        cq.spec.checks_for(f for psa in admission.pod_set_assignments for f in psa.flavors.values())
        if cq.spec.admission_checks  # most queues have none: no generator to build
        else ()
    )
    return Admit(info.key, admission, assignment.borrowing > 0, checks)


def _record(span: trace.Span, entry: Entry | None, decision: Decision) -> None:
    span.set_attribute("kueue.workload", decision.key)
    if isinstance(decision, Pending | Preempt):
        span.set_attribute("kueue.cluster_queue", decision.cluster_queue)
    if entry is not None:
        span.set_attribute("kueue.cluster_queue", entry.cq.name)
        span.set_attribute("kueue.borrowing", entry.assignment.borrowing)
        span.set_attribute(
            "kueue.flavors_tried",
            [
                f"{ps}/{o.flavor}: {o.mode.name}"
                + (f" ({'; '.join(o.reasons)})" if o.reasons else "")
                for ps, options in entry.assignment.flavors_tried.items()
                for o in options
            ],
        )
    if isinstance(decision, Admit):
        span.set_attribute("kueue.result", "admitted")
    elif isinstance(decision, Preempt):
        span.set_attribute("kueue.result", "preempting")
        span.set_attribute("kueue.preemption_targets", [v.key for v in decision.victims])
    else:
        span.set_attribute("kueue.result", "pending")
        span.set_attribute("kueue.reason", decision.reason)
        span.set_attribute("kueue.message", decision.message)


def schedule(
    snapshot: Snapshot,
    heads: Sequence[WorkloadInfo],
    plugins: AdmissionPlugins,
    namespace_labels: Mapping[str, Mapping[str, str]],
    preemptors: Collection[str] = frozenset(),
) -> CycleResult:
    """Decide every head; at most one admission per ClusterQueue, several per cohort.
    ``preemptors``: the heads that issued preemptions in an earlier cycle and wait for them."""
    if _spans_are_no_ops():
        return _schedule(snapshot, heads, plugins, namespace_labels, preemptors, None)
    with tracer.start_as_current_span("kq.scheduler.cycle") as cycle_span:
        return _schedule(snapshot, heads, plugins, namespace_labels, preemptors, cycle_span)


def _spans_are_no_ops() -> bool:
    """No tracer provider is installed: a span would record nothing, yet making one costs
    about 8 us, a tenth of a cycle that decides one head."""
    return isinstance(tracer, trace.ProxyTracer) and isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider
    )


def _schedule(
    snapshot: Snapshot,
    heads: Sequence[WorkloadInfo],
    plugins: AdmissionPlugins,
    namespace_labels: Mapping[str, Mapping[str, str]],
    preemptors: Collection[str],
    cycle_span: trace.Span | None,
) -> CycleResult:
    decisions: list[Decision] = []
    entries: list[Entry] = []
    recording = cycle_span is not None and cycle_span.is_recording()
    for info in heads:
        nominated = nominate(snapshot, info, plugins, namespace_labels)
        if isinstance(nominated, Pending):
            decisions.append(nominated)
            if recording:
                with tracer.start_as_current_span("kq.admission.decision") as span:
                    _record(span, None, nominated)
        else:
            nominated.preemptor = info.key in preemptors
            entries.append(nominated)
    ordered: Iterable[Entry] = (
        fair_order(snapshot, entries)
        if snapshot.fair_sharing is not None
        else sorted(entries, key=Entry.order_key)
    )
    claims = _Claims(snapshot)
    for entry in ordered:
        decision = _decide(snapshot, entry, claims)
        decisions.append(decision)
        if recording:
            with tracer.start_as_current_span("kq.admission.decision") as span:
                _record(span, entry, decision)
    admitted = sum(isinstance(d, Admit) for d in decisions)
    trace_id = ""
    if cycle_span is not None:
        cycle_span.set_attribute("kueue.heads", len(heads))
        cycle_span.set_attribute("kueue.admitted", admitted)
        if recording:
            trace_id = format(cycle_span.get_span_context().trace_id, "032x")
    return CycleResult(
        tuple(decisions),
        len(entries),
        admitted,
        {d.key: d for d in decisions},
        assignments={e.info.key: e.assignment for e in entries},
        trace_id=trace_id,
    )
