"""Why a workload waits (or why it got its flavor), in words a user reads in one screen.

Read from what the scheduler recorded for the workload's last decision (``Scheduler.last``:
the decision and the flavor assignment it was made on, the same data as its span), plus where
it stands now: its place in the queue, who holds the quota it misses, its checks and back-off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kq.api.conditions import find
from kq.api.quantity import format_amount
from kq.api.workload import ADMITTED, QUOTA_RESERVED, Workload, parse_workload
from kq.cache.snapshot import ClusterQueueSnapshot, Snapshot
from kq.queue.cluster_queue import PendingQueue
from kq.scheduler.decisions import Admit, Pending, Preempt
from kq.scheduler.last import Decided
from kq.scheduler.modes import Mode
from kq.scheduler.scheduler import Scheduler
from kq.visibility.summary import in_order

Object = dict[str, Any]
AHEAD_SHOWN = 3
HOLDERS_SHOWN = 5


def explain(scheduler: Scheduler, raw: Mapping[str, Any], now: float) -> Object:
    """A ``WorkloadExplanation``: its state, the recorded decision, and ``lines`` to print."""
    workload = parse_workload(raw)
    if not isinstance(workload, Workload):
        return _document(raw, "Invalid", [f"the Workload cannot be read: {workload.message}"])
    decided = scheduler.last.get(workload.key)
    state, lines = _state(workload)
    if workload.admission is None and not workload.is_finished:
        lines += _position(scheduler, workload)
    if decided is None and state == "Pending":
        decided, words = _shape_decision(scheduler, workload)
        lines += words
    if decided is not None:
        lines += _decision(scheduler, workload, decided, now)
        if decided.trace_id:
            lines.append(f"Decision trace: {decided.trace_id} (its kq.admission.decision span)")
    elif state == "Pending":
        lines.append("No scheduling decision recorded here yet (it has not been tried by this "
                     "replica, or another replica leads).")  # fmt: skip
    lines += _checks(raw)
    document = _document(raw, state, lines)
    if decided is not None and decided.trace_id:
        document["traceId"] = decided.trace_id
    return document


def _document(raw: Mapping[str, Any], state: str, lines: list[str]) -> Object:
    meta = raw.get("metadata") or {}
    return {
        "kind": "WorkloadExplanation",
        "apiVersion": "visibility.kueue.x-k8s.io/v1beta1",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "state": state,
        "lines": lines,
    }


def _state(workload: Workload) -> tuple[str, list[str]]:
    head = f"Workload {workload.key} (LocalQueue {workload.queue_name or '-'}, priority "
    head += f"{workload.priority})"
    if workload.is_finished:
        return "Finished", [f"{head} has finished."]
    if not workload.active:
        return "Inactive", [f"{head} is deactivated (spec.active: false)."]
    reserved = find(workload.conditions, QUOTA_RESERVED)
    if workload.admission is not None:
        admitted = find(workload.conditions, ADMITTED)
        if admitted is not None and admitted.is_true:
            return "Admitted", [f"{head} is admitted in {workload.admission.cluster_queue}."]
        return "QuotaReserved", [
            f"{head} holds quota in {workload.admission.cluster_queue} and waits for its "
            "admission checks."
        ]
    words = f": {reserved.reason}: {reserved.message}" if reserved is not None else ""
    return "Pending", [f"{head} is pending{words}"]


def _queue_of(scheduler: Scheduler, workload: Workload) -> PendingQueue | None:
    lq = scheduler.queues.local_queues.get(f"{workload.namespace}/{workload.queue_name}")
    return None if lq is None else scheduler.queues.queues.get(lq.cluster_queue)


def _shape_decision(scheduler: Scheduler, workload: Workload) -> tuple[Decided | None, list[str]]:
    """A workload never tried itself because a queued one of its shape failed first (the
    queue then parks the whole shape, as Kueue's equivalence hash): that one's decision, the
    latest, which stands for both."""
    queue = _queue_of(scheduler, workload)
    pending = [] if queue is None else in_order(queue)
    mine = next((info for info in pending if info.key == workload.key), None)
    if mine is None:
        return None, []
    mates = [
        (decided.at, info.key, decided)
        for info in pending
        if info.shape == mine.shape and info.key != mine.key
        and (decided := scheduler.last.get(info.key)) is not None
    ]  # fmt: skip
    if not mates:
        return None, []
    _, key, decided = max(mates, key=lambda mate: mate[:2])
    return decided, [
        f"Not tried itself: {key} has its shape (priority, pod counts, requests, node "
        "constraints), so the decision on it stands for both."
    ]


def _position(scheduler: Scheduler, workload: Workload) -> list[str]:
    queue = _queue_of(scheduler, workload)
    if queue is None:
        return ["It is in no ClusterQueue's queue (its LocalQueue or ClusterQueue is missing)."]
    pending = in_order(queue)
    keys = [info.key for info in pending]
    if workload.key not in keys:
        return [f"It is not queued in ClusterQueue {queue.name} right now."]
    index = keys.index(workload.key)
    ahead = ", ".join(f"{i.key} (priority {i.priority})" for i in pending[:index][:AHEAD_SHOWN])
    more = f" and {index - AHEAD_SHOWN} more" if index > AHEAD_SHOWN else ""
    line = f"Position {index + 1} of {len(keys)} in ClusterQueue {queue.name}"
    return [line + (f"; ahead of it: {ahead}{more}." if index else "; first in line.")]


def _decision(scheduler: Scheduler, workload: Workload, decided: Decided, now: float) -> list[str]:
    decision = decided.decision
    lines = [f"Last scheduling decision, {_ago(now - decided.at)} ago:"]
    if isinstance(decision, Admit):
        lines.append(f"  admitted in {decision.admission.cluster_queue}")
    elif isinstance(decision, Preempt):
        victims = ", ".join(f"{v.key} ({v.reason})" for v in decision.victims)
        lines.append(f"  preempting {victims} to make room")
    elif isinstance(decision, Pending):
        lines.append(f"  pending: {decision.reason}: {decision.message}")
        lines += _budget(decision)
    assignment = decided.assignment
    if assignment is None:
        return lines
    for pod_set, options in assignment.flavors_tried.items():
        for option in options:
            why = f" ({'; '.join(option.reasons)})" if option.reasons else ""
            lines.append(f"  pod set {pod_set}, flavor {option.flavor}: {_mode(option.mode)}{why}")
    snapshot = scheduler.cache.snapshot()
    cq = snapshot.cluster_queues.get(decision.cluster_queue if not isinstance(decision, Admit)
                                     else decision.admission.cluster_queue)  # fmt: skip
    if cq is not None and not isinstance(decision, Admit):
        lines += _missing(snapshot, cq, workload, assignment.usage)
    return lines


def _budget(decision: Pending) -> list[str]:
    """A Budget's veto (the ``budgets`` plugin) names it: where its figures are, what lets in."""
    words = decision.message.split(" ", 2)
    if decision.reason != "Vetoed" or len(words) < 3 or words[0] != "budget":
        return []
    name = words[1].rstrip(":")
    return [
        f"  Budget {name} keeps it waiting: `kubectl get budget {name} -o yaml` shows what its "
        "window consumed (status.consumed) and what admitted workloads may still use "
        "(status.reserved); it gets in once enough is freed (a workload finishing before its "
        "maximumExecutionTimeSeconds, the window moving on) or the budget is raised."
    ]


def _ago(seconds: float) -> str:
    whole = max(0, int(seconds))
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


def _mode(mode: Mode) -> str:
    return {
        Mode.FIT: "fits",
        Mode.NO_FIT: "does not fit",
        Mode.NO_CANDIDATES: "needs preemption, no candidate",
        Mode.PREEMPT: "fits by preempting in its ClusterQueue",
        Mode.RECLAIM: "fits by reclaiming from the cohort",
    }.get(mode, mode.name)


def _missing(
    snapshot: Snapshot, cq: ClusterQueueSnapshot, workload: Workload, usage: Mapping[Any, int]
) -> list[str]:
    """Per flavor and resource it asks for more of than is free: by how much, and who holds it."""
    lines = []
    for fr, amount in sorted(usage.items()):
        free = snapshot.available(cq, fr)
        if amount <= free:
            continue
        flavor, resource = fr
        short = format_amount(resource, amount - free)
        lines.append(
            f"Missing {short} {resource} in flavor {flavor}: it needs "
            f"{format_amount(resource, amount)}, {format_amount(resource, free)} is free "
            f"(nominal {format_amount(resource, snapshot.nominal(cq, fr))}, "
            f"used {format_amount(resource, snapshot.used(cq, fr))} in {cq.name})."
        )
        holders = sorted(
            ((info.usage.get(fr, 0), info.key, info.priority) for info in cq.workloads.values()),
            reverse=True,
        )
        held = [f"{key} {format_amount(resource, n)} (priority {p})" for n, key, p in holders if n]
        if held:
            lines.append(f"  held in {cq.name} by: {', '.join(held[:HOLDERS_SHOWN])}")
        policy = cq.spec.preemption
        lines.append(
            f"  it could get in with {short} more {resource} in flavor {flavor} (a higher "
            "nominalQuota or borrowingLimit, or quota freed), or by preemption "
            f"(withinClusterQueue: {policy.within_cluster_queue}, reclaimWithinCohort: "
            f"{policy.reclaim_within_cohort}, its priority {workload.priority})."
        )
    return lines


def _checks(raw: Mapping[str, Any]) -> list[str]:
    status = raw.get("status") or {}
    lines = [
        f"Admission check {c.get('name')}: {c.get('state')}"
        + (f" ({c['message']})" if c.get("message") else "")
        for c in status.get("admissionChecks") or ()
    ]
    requeue = status.get("requeueState") or {}
    if requeue.get("requeueAt"):
        lines.append(
            f"Backing off until {requeue['requeueAt']} (requeued {requeue.get('count', 0)} times)."
        )
    return lines
