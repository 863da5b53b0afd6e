"""Keeps the ledger from the API and each LocalQueue's ``status.fairSharing`` from the ledger.

On each tick (a LocalQueue or Workload changed, or a sample is due) it reads every LocalQueue
and Workload from the informer caches: a LocalQueue seen for the first time brings back the
consumed resources its status holds (a restarted or newly elected kq goes on from there); a
workload seen ``Admitted`` settles its entry penalty, one gone or finished first drops it; and
every ``usageSamplingInterval`` each LocalQueue decays towards its admitted usage and its
status is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import structlog

from kq.plugin import (
    LOCAL_QUEUES,
    WORKLOADS,
    ApiError,
    ControllerContext,
    Resource,
    parse_quantity,
    report_admission_fair_sharing_usage,
    rfc3339,
)
from kq_plugins.admission_fair_sharing.ledger import Ledger
from kq_plugins.admission_fair_sharing.usage import added, from_quantities, to_quantity

log = structlog.get_logger("kq_plugins.admission_fair_sharing")

MIN_GAP_S = 0.2
"""At least this long between ticks: a busy cluster changes Workloads all the time."""

Obj = Mapping[str, Any]


@dataclass
class _Seen:
    """One tick's reading of the Workloads."""

    live: dict[str, dict[str, float]] = field(default_factory=dict)
    """LocalQueue key → the summed usage of its admitted, unfinished workloads."""
    by_key: dict[str, Obj] = field(default_factory=dict)


def _true(obj: Obj, kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def read_workloads(workloads: Iterable[Obj]) -> _Seen:
    seen = _Seen()
    for obj in workloads:
        seen.by_key[_key(obj)] = obj
        if not _true(obj, "Admitted") or _true(obj, "Finished"):
            continue
        lq = f"{obj['metadata'].get('namespace', '')}/{(obj.get('spec') or {}).get('queueName')}"
        admission = (obj.get("status") or {}).get("admission") or {}
        for assignment in admission.get("podSetAssignments") or ():
            usage = from_quantities(assignment.get("resourceUsage"))
            seen.live[lq] = added(seen.live.get(lq, {}), usage)
    return seen


def weight_of(lq: Obj) -> float:
    raw = ((lq.get("spec") or {}).get("fairSharing") or {}).get("weight")
    return 1.0 if raw is None else float(parse_quantity(raw))


def _consumed(lq: Obj) -> dict[str, float]:
    fair = (lq.get("status") or {}).get("fairSharing") or {}
    return from_quantities((fair.get("admissionFairSharingStatus") or {}).get("consumedResources"))


def sync(ledger: Ledger, local_queues: Iterable[Obj], seen: _Seen, now: float) -> None:
    """Seed new LocalQueues, take weights, settle or drop entry penalties."""
    present = set()
    for lq in local_queues:
        key = _key(lq)
        present.add(key)
        ledger.seed(key, _consumed(lq))
        ledger.set_weight(key, weight_of(lq))
    for key in set(ledger.entries) - present:
        ledger.forget(key)
    for key, entry in list(ledger.entries.items()):
        for workload in list(entry.penalties):
            obj = seen.by_key.get(workload)
            if obj is not None and _true(obj, "Admitted"):
                ledger.sample(key, seen.live.get(key, {}), now, settle=workload)
            elif obj is None or _true(obj, "Finished") or not _holds_or_waits(obj):
                ledger.drop(key, workload)
    for workload in set(ledger.queued) - set(seen.by_key):
        del ledger.queued[workload]


def _holds_or_waits(obj: Obj) -> bool:
    """Still on its way to admission: active, or still holding its quota reservation."""
    return (obj.get("spec") or {}).get("active", True) is not False or _true(obj, "QuotaReserved")


def status_patch(ledger: Ledger, lq: Obj, now: float) -> dict[str, Any]:
    """The merge patch of ``status.fairSharing`` that records the LocalQueue's entry."""
    entry = ledger.entries[_key(lq)]
    fair = (lq.get("status") or {}).get("fairSharing") or {}
    old = (fair.get("admissionFairSharingStatus") or {}).get("consumedResources") or {}
    consumed: dict[str, Any] = {name: None for name in old}
    consumed.update({name: to_quantity(v) for name, v in sorted(entry.consumed.items())})
    status = {"consumedResources": consumed, "lastUpdate": rfc3339(now)}
    share = fair.get("weightedShare", 0)
    fair_sharing = {"weightedShare": share, "admissionFairSharingStatus": status}
    return {"status": {"fairSharing": fair_sharing}}


class AdmissionFairSharingController:
    NAME: ClassVar[str] = "admission-fair-sharing"
    WATCHES: ClassVar[tuple[Resource, ...]] = (LOCAL_QUEUES, WORKLOADS)
    ledger: ClassVar[Ledger | None] = None
    """The ledger the plugin's hooks read; set by the plugin module at import."""

    def __init__(self) -> None:
        if self.ledger is not None and self.ledger.config is not None:
            self.ledger.expected = True

    async def run(self, ctx: ControllerContext) -> None:
        ledger = self.ledger
        assert ledger is not None
        if ledger.config is None:  # admissionFairSharing is off: nothing to keep
            await asyncio.Event().wait()
        assert ledger.config is not None
        interval = ledger.config.usage_sampling_interval
        wake = asyncio.Event()
        for resource in self.WATCHES:
            ctx.on_change(resource, wake.set)
        sampled: dict[str, float] = {}
        reported: dict[str, tuple[str, str, str]] = {}
        while True:
            now = ledger.clock()
            local_queues = list(ctx.store(LOCAL_QUEUES).values())
            seen = read_workloads(ctx.store(WORKLOADS).values())
            sync(ledger, local_queues, seen, now)
            if not ledger.ready:
                ledger.ready = True
                ctx.retry_vetoed()
            await _sample_due(ctx, ledger, local_queues, seen, now, sampled, reported)
            due = min((at + interval for at in sampled.values()), default=now + interval)
            try:
                async with asyncio.timeout(max(MIN_GAP_S, due - ledger.clock())):
                    await wake.wait()
            except TimeoutError:
                pass
            wake.clear()
            await asyncio.sleep(MIN_GAP_S)


async def _sample_due(
    ctx: ControllerContext,
    ledger: Ledger,
    local_queues: Sequence[Obj],
    seen: _Seen,
    now: float,
    sampled: dict[str, float],
    reported: dict[str, tuple[str, str, str]],
) -> None:
    """Decay, write the status and report the usage of each LocalQueue not sampled for an
    interval; a LocalQueue gone loses its series."""
    assert ledger.config is not None
    for lq in local_queues:
        key = _key(lq)
        if now - sampled.get(key, -float("inf")) < ledger.config.usage_sampling_interval:
            continue
        ledger.sample(key, seen.live.get(key, {}), now)
        meta = lq["metadata"]
        cluster_queue = str((lq.get("spec") or {}).get("clusterQueue") or "")
        report_admission_fair_sharing_usage(
            meta["name"], meta.get("namespace", ""), cluster_queue, ledger.usage_of(key)
        )
        reported[key] = (meta["name"], meta.get("namespace", ""), cluster_queue)
        try:
            await ctx.client.merge_patch(
                LOCAL_QUEUES,
                meta["name"],
                status_patch(ledger, lq, now),
                namespace=meta.get("namespace"),
                subresource="status",
            )
            sampled[key] = now
        except ApiError as exc:  # 404: deleted meanwhile; else tried again on the next tick
            if exc.status != 404:
                log.warning("LocalQueue status not written", local_queue=key, error=str(exc))
    for key in set(sampled) - {_key(lq) for lq in local_queues}:
        del sampled[key]
    for key in set(reported) - {_key(lq) for lq in local_queues}:
        report_admission_fair_sharing_usage(*reported.pop(key), None)
