"""A run's tail: the admissions after the last one of any other class than the last admitted.

In the baseline mix the small workloads have the lowest priority, so they wait until the
medium and large ones are done and are then admitted with most quota idle. That stretch is
bound by how many admissions the processes can carry per second, not by quota, so this
prints its rate, the quota it held, the controller's cycles, and each process's CPU per
admission in it (from the runner's samples of ``/proc`` once a second).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Mapping, Sequence
from typing import Any

from perf_runner import Record

Object = dict[str, Any]
PROCESSES = ("server", "controller", "runner")


def tail(run: Mapping[str, Any]) -> Object | None:
    """The tail's figures; ``None`` if the run has no admissions or a single class."""
    admitted = [r for r in run["records"].values() if r.admitted_seen is not None]
    if not admitted:
        return None
    last = max(admitted, key=lambda r: r.admitted_seen or 0.0).class_name
    others = [r.admitted_seen or 0.0 for r in admitted if r.class_name != last]
    if not others:
        return None
    start = max(others)
    end = run["started"] + run["makespanS"]
    count = sum(r.class_name == last and (r.admitted_seen or 0.0) > start for r in admitted)
    seconds = max(end - start, 1e-9)
    nominal = sum(q.nominal for q in run["queues"])
    cycles = [h for t, h in zip(run["controller"].get("cycleAt", ()),
                                run["controller"].get("cycleHeads", ()),
                                strict=False) if start < t <= end]  # fmt: skip
    return {
        "className": last,
        "startS": start - run["started"],
        "seconds": seconds,
        "admissions": count,
        "perSecond": count / seconds,
        "heldPct": _held(admitted, start, end) * 100 / max(1, nominal * seconds),
        "cycles": len(cycles),
        "headsPerCycle": sum(cycles) / len(cycles) if cycles else None,
        "cpuMsPerAdmission": _cpu(run.get("cpuSamples", ()), start, end, count),
    }


def _held(records: Sequence[Record], start: float, end: float) -> float:
    """CPU-seconds the runner saw admitted within [start, end] (each record's last stint)."""
    total = 0.0
    for r in records:
        until = r.finished_seen if r.finished_seen is not None else end
        overlap = min(until, end) - max(r.admitted_seen or end, start)
        total += r.cpu * max(0.0, overlap)
    return total


def _cpu(samples: Sequence[Sequence[float]], start: float, end: float, count: int) -> Object:
    """Per process: CPU ms per tail admission and share of one core, between the samples
    that bracket the tail most closely from inside."""
    times = [s[0] for s in samples]
    first, last = bisect.bisect_left(times, start), bisect.bisect_right(times, end) - 1
    if count == 0 or last <= first:
        return {}
    a, b = samples[first], samples[last]
    span = b[0] - a[0]
    return {
        name: {"ms": (b[i] - a[i]) * 1e3 / count, "coreShare": (b[i] - a[i]) / span}
        for i, name in enumerate(PROCESSES, start=1)
        if a[i] is not None and b[i] is not None
    }


def show_tail(t: Mapping[str, Any] | None) -> None:
    if t is None:
        return
    print(f"tail: {t['admissions']:,} {t['className']} admitted after the last other admission "
          f"(at {t['startS']:.1f} s): {t['seconds']:.1f} s at {t['perSecond']:.0f}/s")  # fmt: skip
    heads = t["headsPerCycle"]
    per_cycle = "" if heads is None else f", {heads:.1f} heads each"
    print(f"  quota held {t['heldPct']:.1f} % of nominal; {t['cycles']} cycles "
          f"({t['cycles'] / t['seconds']:.1f}/s{per_cycle})")  # fmt: skip
    cpu = t["cpuMsPerAdmission"]
    if cpu:
        parts = ", ".join(f"{name} {c['ms']:.2f} ms ({c['coreShare'] * 100:.0f} % of a core)"
                          for name, c in cpu.items())  # fmt: skip
        print(f"  CPU per tail admission: {parts}")
        rate = ceiling({name: c["ms"] for name, c in cpu.items()}, os.cpu_count() or 1)
        least = t["admissions"] / rate
        print(f"  at these costs {os.cpu_count()} CPUs carry at most {rate:.0f} admissions/s "
              f"(each process on one CPU at most): the tail takes at least {least:.1f} s, "
              f"the run {t['startS'] + least:.1f} s")  # fmt: skip


def ceiling(ms: Mapping[str, float], cpus: int) -> float:
    """Admissions per second that processes costing ``ms`` CPU each can carry on ``cpus``
    CPUs, if nothing else ran and none waited: each single-threaded process is bound by one
    CPU, all together by the machine."""
    busiest, total = max(ms.values()), sum(ms.values())
    return 1e3 / max(busiest, total / min(cpus, len(ms)))
