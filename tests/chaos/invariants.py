"""What must hold at every sampled instant and at the end, judged from Workload objects alone.

A sample is one LIST of every Workload, which the API server answers at a single
resourceVersion: one instant of the cluster. Pure functions over dicts, so the checker itself
is tested with hypothesis (``test_invariants.py``) apart from any storm.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kq.api.quantity import parse_quantity
from tests.chaos.topology import RESOURCE, Queue

Usage = Mapping[tuple[str, str], Fraction]
"""(flavor, resource) → amount."""


def clock() -> str:
    """Wall-clock time to the millisecond, as kq's logs stamp theirs (to read one by the other)."""
    now = time.time()
    return f"{time.strftime('%H:%M:%S', time.gmtime(now))}.{int(now * 1000) % 1000:03d}"


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any]:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return {}


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    return condition(obj, type_).get("status") == "True"


def key(obj: Mapping[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def holding(obj: Mapping[str, Any]) -> tuple[str, Usage] | None:
    """(ClusterQueue, usage) if the Workload holds quota: it has an admission and is not
    finished. An evicted Workload holds quota until its admission is cleared."""
    admission = (obj.get("status") or {}).get("admission")
    if not admission or is_true(obj, "Finished"):
        return None
    usage: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    for assignment in admission.get("podSetAssignments") or ():
        for resource, flavor in (assignment.get("flavors") or {}).items():
            amount = (assignment.get("resourceUsage") or {}).get(resource, "0")
            usage[flavor, resource] += parse_quantity(amount)
    return str(admission.get("clusterQueue")), dict(usage)


def quota_violations(workloads: Iterable[Mapping[str, Any]], queues: Sequence[Queue]) -> list[str]:
    """Where admitted usage exceeds what quota allows, per ClusterQueue and per cohort.

    A queue may use its nominal quota plus at most its borrowing limit. In a cohort, what
    queues use beyond the part of their quota they do not lend (nominal - lendingLimit) must
    fit in what the cohort's queues lend (their lending limits, or their nominal quotas).
    """
    used: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    holders: dict[str, list[str]] = defaultdict(list)
    for obj in workloads:
        held = holding(obj)
        if held is not None:
            used[held[0]].update(held[1])
            holders[held[0]].append(
                f"{obj['metadata']['name']}@{obj['metadata'].get('resourceVersion')}"
            )
    found = [
        f"{cq}: admitted to an unknown ClusterQueue"
        for cq in used
        if cq not in {q.name for q in queues}
    ]
    cohorts: dict[str, list[Queue]] = defaultdict(list)
    for q in queues:
        for flavor, quota in q.quotas.items():
            amount = used[q.name][flavor, RESOURCE]
            cap = (
                None
                if q.cohort and quota.borrowing_limit is None
                else quota.nominal + (quota.borrowing_limit or 0)
            )
            if cap is not None and amount > cap:
                found.append(
                    f"{q.name}/{flavor}: {amount} {RESOURCE} admitted, {cap} allowed "
                    f"({', '.join(holders[q.name])})"
                )
        if q.cohort:
            cohorts[q.cohort].append(q)
    for cohort, members in cohorts.items():
        found += _cohort_violations(cohort, members, used, holders)
    return found


def _cohort_violations(
    cohort: str,
    members: Sequence[Queue],
    used: Mapping[str, Counter[tuple[str, str]]],
    holders: Mapping[str, list[str]],
) -> list[str]:
    found = []
    for flavor in sorted({f for q in members for f in q.quotas}):
        lent = borrowed = Fraction(0)
        for q in members:
            quota = q.quotas.get(flavor)
            nominal = quota.nominal if quota else 0
            lendable = (
                nominal if quota is None or quota.lending_limit is None else quota.lending_limit
            )
            lent += lendable
            beyond = Fraction(used[q.name][flavor, RESOURCE]) - (nominal - lendable)
            borrowed += max(Fraction(0), beyond)
        if borrowed > lent:
            each = ", ".join(f"{q.name} {used[q.name][flavor, RESOURCE]}" for q in members)
            drawn = f"{borrowed} {RESOURCE} drawn from a pool of {lent}"
            found.append(f"cohort {cohort}/{flavor}: {drawn} (used: {each})")
            found += [f"  {q.name} holders: {', '.join(holders[q.name])}" for q in members]
    return found


def job_owner(obj: Mapping[str, Any]) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("kind") == "Job":
            return f"{obj['metadata']['namespace']}/{ref.get('name')}"
    return None


@dataclass
class Ledger:
    """What the samples showed over time: admissions, finishes, and what must never happen."""

    violations: list[str] = field(default_factory=list)
    admissions: Counter[str] = field(default_factory=Counter)
    evictions: Counter[str] = field(default_factory=Counter)
    finished: set[str] = field(default_factory=set)
    samples: int = 0
    _held: dict[str, str] = field(default_factory=dict)  # uid → key, as of the last sample

    def observe(self, workloads: Sequence[Mapping[str, Any]], queues: Sequence[Queue]) -> None:
        self.samples += 1
        at = f"sample {self.samples} at {clock()}"
        self.violations += [f"{at}: {v}" for v in quota_violations(workloads, queues)]
        held: dict[str, str] = {}
        per_job: Counter[str] = Counter()
        for obj in workloads:
            uid = obj["metadata"]["uid"]
            if is_true(obj, "Finished"):
                self.finished.add(uid)
            elif uid in self.finished:
                self.violations.append(f"{at}: {key(obj)} was finished and is no longer")
            if holding(obj) is None:
                continue
            held[uid] = key(obj)
            owner = job_owner(obj)
            if owner:
                per_job[owner] += 1
        self.violations += [
            f"{at}: Job {j} holds quota {n} times" for j, n in per_job.items() if n > 1
        ]
        for uid, name in held.items():
            if uid not in self._held:
                self.admissions[name] += 1
        for uid, name in self._held.items():
            if uid not in held and uid not in self.finished:
                self.evictions[name] += 1
        self._held = held


def unsettled(obj: Mapping[str, Any]) -> str | None:
    """Why a Workload has not converged, or None: it finished, or waits saying why."""
    if is_true(obj, "Finished"):
        return None
    waiting = condition(obj, "QuotaReserved")
    released = (obj.get("status") or {}).get("admission") is None
    said = bool(waiting.get("reason") and waiting.get("message"))
    if released and waiting.get("status") == "False" and said:
        return None
    return (
        f"{key(obj)}: neither finished nor pending with a reason ({waiting or 'no QuotaReserved'})"
    )
