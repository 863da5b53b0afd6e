"""The accounting of one budget, pure: admissions in, resource-seconds out.

Usage is what an admitted workload holds (its admission's ``resourceUsage``) times the time it
holds it, counted from its ``Admitted`` condition, the clock ``maximumExecutionTimeSeconds``
runs on. Amounts are in Kueue units (cpu in millicores), time in epoch seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

Usage = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Entry:
    """One admission of one workload: from ``start`` to ``end`` (``None``: still running)."""

    workload: str
    uid: str
    start: float
    usage: Usage
    end: float | None = None
    bound_end: float | None = None
    """When ``maximumExecutionTimeSeconds`` stops it; ``None`` when it has no limit."""
    total: Mapping[str, float] | None = None
    """A compacted entry: these resource-seconds count in full while ``end`` is in the window."""

    def closed(self, at: float) -> Entry:
        return replace(self, end=max(self.start, at))

    def seconds_in(self, since: float, until: float) -> float:
        """How long it held its usage within ``[since, until]``."""
        end = until if self.end is None else min(self.end, until)
        return max(0.0, end - max(self.start, since))

    def seconds_left(self, now: float) -> float:
        """How much longer it may run: zero once closed or without a known bound."""
        if self.end is not None or self.bound_end is None:
            return 0.0
        return max(0.0, self.bound_end - max(now, self.start))


@dataclass(frozen=True, slots=True)
class Account:
    """Resource-seconds per resource: consumed in the window, and reserved by what runs."""

    consumed: Mapping[str, float] = field(default_factory=dict)
    reserved: Mapping[str, float] = field(default_factory=dict)

    def used(self, resource: str) -> float:
        return self.consumed.get(resource, 0.0) + self.reserved.get(resource, 0.0)

    def moved(self, before: Account, after: Account) -> Account:
        """This account with ``before``'s figures taken out and ``after``'s put in."""
        return Account(
            _moved(self.consumed, before.consumed, after.consumed),
            _moved(self.reserved, before.reserved, after.reserved),
        )

    def plus(self, also_reserved: Iterable[Mapping[str, float]]) -> Account:
        """This account with more needs reserved (itself when there are none)."""
        needs = list(also_reserved)
        if not needs:
            return self
        reserved = dict(self.reserved)
        for wanted in needs:
            for resource, seconds in wanted.items():
                reserved[resource] = reserved.get(resource, 0.0) + seconds
        return Account(self.consumed, reserved)


def _moved(
    base: Mapping[str, float], out: Mapping[str, float], into: Mapping[str, float]
) -> dict[str, float]:
    moved = dict(base)
    for resource, amount in out.items():
        moved[resource] = moved.get(resource, 0.0) - amount
    for resource, amount in into.items():
        moved[resource] = moved.get(resource, 0.0) + amount
    return moved


def account(
    entries: Iterable[Entry],
    window_start: float,
    now: float,
    also_reserved: Iterable[Mapping[str, float]] = (),
) -> Account:
    """What ``entries`` consumed in ``[window_start, now]`` and still may consume after ``now``.

    ``also_reserved``: needs not in the ledger yet (holding quota, not admitted; just granted).
    """
    consumed: dict[str, float] = {}
    reserved: dict[str, float] = {}
    for entry in entries:
        if entry.total is not None:
            if entry.end is not None and entry.end > window_start:
                for resource, amount in entry.total.items():
                    consumed[resource] = consumed.get(resource, 0.0) + amount
            continue
        held = entry.seconds_in(window_start, now)
        left = entry.seconds_left(now)
        for resource, amount in entry.usage.items():
            if held:
                consumed[resource] = consumed.get(resource, 0.0) + amount * held
            if left:
                reserved[resource] = reserved.get(resource, 0.0) + amount * left
    return Account(consumed, reserved).plus(also_reserved)


def need(usage: Usage, seconds: float) -> dict[str, float]:
    """Resource-seconds a workload holding ``usage`` for ``seconds`` consumes."""
    return {resource: amount * seconds for resource, amount in usage.items() if amount}


def prune(entries: Iterable[Entry], window_start: float) -> list[Entry]:
    """Drop the admissions that ended before the window: they count no more."""
    return [e for e in entries if e.end is None or e.end > window_start]


MAX_ENTRIES = 500
"""Closed entries a ledger keeps one by one; older ones are merged, a chunk at a time, so a
Budget's status stays far below the API server's object size limit."""
CHUNK = 50


def compact(
    entries: list[Entry],
    window_start: float,
    now: float,
    most: int = MAX_ENTRIES,
    chunk: int = CHUNK,
) -> list[Entry]:
    """Merge the oldest closed entries, ``chunk`` at a time, into entries that count all they
    consumed in the window until the last of them leaves it: never less than the originals."""
    closed = sorted((e for e in entries if e.end is not None), key=lambda e: e.end or 0.0)
    if len(closed) <= most:
        return entries
    merged = closed[: len(closed) - most + chunk]
    keep = [e for e in entries if e.end is None] + closed[len(merged) :]
    chunks = [merged[i : i + chunk] for i in range(0, len(merged), chunk)]
    return [_merge(chunk, window_start, now) for chunk in chunks] + keep


def _merge(chunk: list[Entry], window_start: float, now: float) -> Entry:
    used = account(chunk, window_start, now).consumed
    end = max(e.end or 0.0 for e in chunk)
    first = min(e.start for e in chunk)
    return Entry(f"{len(chunk)} admissions", "", first, {}, end=end, total=dict(used))


def shortfall(
    limits: Mapping[str, float], used: Account, wanted: Mapping[str, float]
) -> tuple[str, float, float] | None:
    """The first resource (sorted) where ``wanted`` does not fit: (resource, used, wanted)."""
    for resource in sorted(limits):
        amount = wanted.get(resource, 0.0)
        if amount and used.used(resource) + amount > limits[resource]:
            return resource, used.used(resource), amount
    return None
