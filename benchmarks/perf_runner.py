"""Kueue's runner in modes B1/B2: records every Workload change (creation, admission,
eviction, finish) and, as the fake job controller, finishes each admitted Workload its
runtime later; integrates each ClusterQueue's admitted CPU over time."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kq.api.quantity import parse_quantity
from kq.runtime.client import KubeClient, retry_on_conflict
from kq.runtime.errors import ApiError
from kq.runtime.informer import Informer
from kq.runtime.resources import CLUSTER_QUEUES, WORKLOADS
from kq.runtime.store import Change

Object = dict[str, Any]
PROGRESS_PERIOD_S = 60.0
_PREEMPTOR_UID = re.compile(r"\(UID: ([^,)]+)")


def condition(obj: Object, type_: str) -> Object | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return dict(c)
    return None


def is_true(obj: Object, type_: str) -> bool:
    c = condition(obj, type_)
    return c is not None and c.get("status") == "True"


def stamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


@dataclass
class Record:
    class_name: str
    cluster_queue: str
    cpu: int
    runtime_s: float
    sent: float
    created: float | None = None
    admitted_stamp: float | None = None
    admitted_seen: float | None = None
    finished_seen: float | None = None
    evictions: int = 0
    admissions: int = 0
    admitted: bool = False
    evicted: bool = False
    holds: bool = False


@dataclass
class Usage:
    """The integral of admitted CPU over time, per ClusterQueue."""

    cpu: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    since: dict[str, float] = field(default_factory=dict)
    integral: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def move(self, cq: str, delta: float, now: float) -> None:
        last = self.since.get(cq, now)
        self.integral[cq] += self.cpu[cq] * (now - last)
        self.since[cq] = now
        self.cpu[cq] += delta

    def set(self, cq: str, value: float, now: float) -> None:
        self.move(cq, value - self.cpu[cq], now)


def status_cpu(cq: Object) -> float:
    """CPU in ``status.flavorsUsage``: what Kueue's recorder integrates."""
    total = 0.0
    for flavor in (cq.get("status") or {}).get("flavorsUsage") or ():
        for res in flavor.get("resources") or ():
            if res.get("name") == "cpu":
                total += float(parse_quantity(res.get("total", "0")))
    return total


class Runner:
    """Kueue's runner: records every Workload change and finishes admitted ones."""

    def __init__(self, client: KubeClient, complete_evictions: bool = False) -> None:
        """``complete_evictions``: clear an evicted Workload's reservation, as Kueue's runner
        does for Kueue (kq's own workload controller does it for bare Workloads)."""
        self.client = client
        self.complete_evictions = complete_evictions
        self._releasing: set[str] = set()
        self.status_writes: Counter[str] = Counter()
        """The runner's accepted Workload status writes, by purpose (finish, release)."""
        self.explained: set[str] = set()
        """Workloads that said why they wait (``QuotaReserved=False``) before first admitted."""
        self.records: dict[str, Record] = {}
        self._class_of_uid: dict[str, str] = {}
        self.preemptions: Counter[tuple[str, str, str]] = Counter()
        """Evictions by (victim's class, Preempted reason, preemptor's class): where two
        controllers' eviction counts differ."""
        self.usage = Usage()
        self.status_usage = Usage()
        self.cohort_of: dict[str, str] = {}
        """Each ClusterQueue's cohort, for ``cohort_peak``."""
        self.cohort_held: Counter[str] = Counter()
        self.cohort_peak: Counter[str] = Counter()
        """The most CPU each cohort's Workloads held at once, in the watch's order: the
        server's own sequence of states, so above the cohort's quota means over-committed."""
        self.informer = Informer(client, WORKLOADS)
        self.informer.add_handler(self.changed)
        self.queues = Informer(client, CLUSTER_QUEUES)
        self.queues.add_handler(self.queue_changed)
        self.finished = 0
        self.failures: list[str] = []
        self.done = asyncio.Event()
        self.expected = 0
        self._timers: set[asyncio.Task[None]] = set()
        self._finishing: dict[str, asyncio.Task[None]] = {}
        self.swept = 0

    def changed(self, change: Change) -> None:
        obj = change.obj
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        record = self.records.get(key)
        if record is None:
            return
        now = time.time()
        if record.created is None:
            record.created = stamp(obj["metadata"]["creationTimestamp"])
            self._class_of_uid[obj["metadata"]["uid"]] = record.class_name
        finished = is_true(obj, "Finished")
        holds = not finished and (obj.get("status") or {}).get("admission") is not None
        if holds != record.holds:
            self._hold(record, record.cpu if holds else -record.cpu, now)
            record.holds = holds
        waits = (condition(obj, "QuotaReserved") or {}).get("status") == "False"
        if waits and not record.admissions:
            self.explained.add(key)
        evicted = is_true(obj, "Evicted")
        if evicted and not record.evicted:
            record.evictions += 1
            self._count_preemption(record, obj)
        record.evicted = evicted
        if evicted and holds and self.complete_evictions and key not in self._releasing:
            self._releasing.add(key)
            self._track(asyncio.create_task(self._release(key, obj)))
        admitted = is_true(obj, "Admitted") and not finished
        if admitted and not record.admitted:
            record.admissions += 1
            if record.admitted_seen is None:
                record.admitted_seen = now
                cond = condition(obj, "Admitted") or {}
                record.admitted_stamp = stamp(cond.get("lastTransitionTime") or "")
            self._start(key, record.admissions, obj["metadata"]["uid"], record.runtime_s)
        record.admitted = admitted
        if finished and record.finished_seen is None:
            record.finished_seen = now
            self.finished += 1
            if self.finished == self.expected:
                self.done.set()

    def _hold(self, record: Record, delta: int, now: float) -> None:
        self.usage.move(record.cluster_queue, delta, now)
        cohort = self.cohort_of.get(record.cluster_queue)
        if cohort is not None:
            self.cohort_held[cohort] += delta
            self.cohort_peak[cohort] = max(self.cohort_peak[cohort], self.cohort_held[cohort])

    def _count_preemption(self, record: Record, obj: Object) -> None:
        preempted = condition(obj, "Preempted") or {}
        reason = preempted.get("reason", "") if preempted.get("status") == "True" else ""
        found = _PREEMPTOR_UID.search(preempted.get("message", ""))
        by = self._class_of_uid.get(found.group(1), "?") if found else "-"
        self.preemptions[record.class_name, reason or "not preempted", by] += 1

    def queue_changed(self, change: Change) -> None:
        name = change.obj["metadata"]["name"]
        self.status_usage.set(name, status_cpu(change.obj), time.time())

    def _start(self, key: str, admission: int, uid: str, runtime: float) -> None:
        task = asyncio.create_task(self._finish(key, admission, uid, runtime))
        self._track(task)
        self._finishing[key] = task

    def _track(self, task: asyncio.Task[None]) -> None:
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

    async def _release(self, key: str, obj: Object) -> None:
        """Kueue's runner's one write for an eviction: no reservation, QuotaReserved and
        Admitted False; a conflict means someone wrote first, and that write is seen again."""
        meta = obj["metadata"]
        now = now_rfc3339()
        kept = [
            c for c in obj["status"]["conditions"] if c["type"] not in ("QuotaReserved", "Admitted")
        ]
        pending = {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "Evicted by the test runner",
            "lastTransitionTime": now,
        }
        unadmitted = {
            "type": "Admitted",
            "status": "False",
            "reason": "NoReservation",
            "message": "The workload has no reservation",
            "lastTransitionTime": now,
        }
        try:
            await self.client.merge_patch(
                WORKLOADS,
                meta["name"],
                {"status": {"admission": None, "conditions": [*kept, pending, unadmitted]}},
                namespace=meta["namespace"],
                resource_version=meta["resourceVersion"],
                subresource="status",
            )
            self.status_writes["release"] += 1
        except ApiError as exc:
            if exc.status != 409:
                self.failures.append(f"{key}: {exc}")
        finally:
            self._releasing.discard(key)

    async def sweep(self) -> None:
        """Every second, finish what is admitted, overdue and has no timer: a handler
        that failed (it is logged) must not leave the run waiting forever."""
        last_told = time.time()
        while True:
            await asyncio.sleep(1.0)
            now = time.time()
            if now - last_told >= PROGRESS_PERIOD_S:
                last_told = now
                self._tell_progress()
            for key, record in self.records.items():
                busy = key in self._finishing and not self._finishing[key].done()
                overdue = record.admitted_seen is not None and now - record.admitted_seen > (
                    record.runtime_s + 2.0
                )
                if record.admitted and record.finished_seen is None and overdue and not busy:
                    obj = self.informer.store.get(key)
                    if obj is not None:
                        self.swept += 1
                        uid = obj["metadata"]["uid"]
                        self._start(key, record.admissions, uid, 0.0)

    def _tell_progress(self) -> None:
        """A line on stderr: a long run shows it moves, a stuck one what it waits for."""
        admitted = sum(r.admitted for r in self.records.values())
        stuck = [k for k, r in self.records.items() if r.finished_seen is None][:3]
        print(f"runner: {self.finished:,}/{self.expected:,} finished, {len(self.records):,} "
              f"created, {admitted:,} admitted; e.g. waiting for {stuck}",
              file=sys.stderr, flush=True)  # fmt: skip

    async def _finish(self, key: str, admission: int, uid: str, runtime: float) -> None:
        await asyncio.sleep(runtime)
        ns, name = key.split("/")
        fresh = False

        async def attempt() -> None:
            nonlocal fresh
            obj = self.informer.store.get(key) if not fresh else None
            if obj is None or not is_true(obj, "Admitted"):
                obj = await self.client.get(WORKLOADS, name, ns)  # the cache may trail
            fresh = True
            record = self.records[key]
            if obj["metadata"]["uid"] != uid or record.admissions != admission:
                return  # evicted and admitted again: that admission has its own timer
            if not is_true(obj, "Admitted") or is_true(obj, "Finished"):
                return
            done = {"type": "Finished", "status": "True", "reason": "Succeeded"}
            stamped = {**done, "message": "finished", "lastTransitionTime": now_rfc3339()}
            await self.client.merge_patch(
                WORKLOADS,
                name,
                {"status": {"conditions": [*obj["status"]["conditions"], stamped]}},
                namespace=ns,
                resource_version=obj["metadata"]["resourceVersion"],
                subresource="status",
            )
            self.status_writes["finish"] += 1

        try:
            await retry_on_conflict(attempt, attempts=10)
        except ApiError as exc:
            self.failures.append(f"{key}: {exc}")
            self.done.set()

    async def close(self) -> None:
        for task in self._timers:
            task.cancel()
        await asyncio.gather(*self._timers, return_exceptions=True)


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
