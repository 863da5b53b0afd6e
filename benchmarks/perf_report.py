"""Modes B1/B2's figures: computed once from a run (``summarize``, what ``--json`` writes),
then printed (``show``) and checked against Kueue's range spec (``check``)."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from perf_runner import Record, Usage
from perf_tail import show_tail, tail
from scaling import CENTERS, cycles_by_pending, pct, rss_growth, scaling_ratio

Object = dict[str, Any]
HISTOGRAM_MS = (0.5, 1, 2, 5, 10, 20, 50, 100)


def summarize(run: Mapping[str, Any]) -> Object:
    """Every figure of a run, JSON-ready; ``run`` is what ``scheduler_perf.bench`` returns."""
    records = run["records"]
    ctl = run["controller"]
    admissions = sum(r.admissions for r in records.values())
    per = max(1, admissions)
    return {
        "mode": run["mode"],
        "fairSharing": run["fairSharing"],
        "workloads": len(records),
        "clusterQueues": len(run["queues"]),
        "swept": run["swept"],
        "failures": run["failures"],
        "wallS": ctl["wallS"],
        "makespanS": run["makespanS"],
        "generatedS": run["generatedS"],
        "admissions": admissions,
        "rawPatchRate": run["rawPatchRate"],
        "timeToAdmissionMs": time_to_admission(records),
        "preemptions": preemptions(run),
        **quota_in_use(run),
        "cohorts": cohort_peaks(run),
        "writes": _writes(ctl, per),
        "cycles": _cycles(ctl),
        "controller": _controller(ctl, len(records), admissions),
        "server": run["server"],
        "tail": tail(run),
    }


def time_to_admission(records: Mapping[str, Record]) -> Object:
    by_class: dict[str, list[Record]] = defaultdict(list)
    for r in records.values():
        by_class[r.class_name].append(r)
    classes = {}
    for name, rs in sorted(by_class.items(), key=lambda kv: -kv[1][0].cpu):
        official = [
            (r.admitted_stamp - r.created) * 1000
            for r in rs
            if r.admitted_stamp is not None and r.created is not None
        ]
        seen = [(r.admitted_seen - r.sent) * 1000 for r in rs if r.admitted_seen is not None]
        classes[name] = {
            "count": len(rs),
            # JSON has no infinity: a class never admitted has no mean
            "mean": statistics.fmean(official) if official else None,
            **{f"p{p}": pct(official, p) for p in (50, 90, 99)},
            "observedMean": statistics.fmean(seen) if seen else None,
            "evictions": sum(r.evictions for r in rs),
        }
    return classes


def preemptions(run: Mapping[str, Any]) -> list[Object]:
    """Evictions by victim's class, Preempted reason and preemptor's class, most first."""
    return [
        {"victim": victim, "reason": reason, "preemptor": by, "count": n}
        for (victim, reason, by), n in run["preemptions"].most_common()
    ]


def show_preemptions(rows: list[Object]) -> None:
    for row in rows:
        print(f"  {row['count']:6d}  {row['victim']:7s} by {row['preemptor']:7s} {row['reason']}")


def quota_in_use(run: Mapping[str, Any]) -> Object:
    elapsed = run["makespanS"]

    def mean_usage(usage: Usage) -> float:
        return statistics.fmean(
            usage.integral[q.name] * 100 / (q.nominal * elapsed) for q in run["queues"]
        )

    return {"cqUsagePct": mean_usage(run["statusUsage"]), "heldPct": mean_usage(run["usage"])}


def cohort_peaks(run: Mapping[str, Any]) -> Object:
    """The fullest cohort's peak of held CPU against its nominal quota, and any cohort whose
    peak exceeded it. Revisions before the peaks were recorded give nothing."""
    cohort_of = run.get("cohortOf", {})
    nominal: Counter[str] = Counter()
    for q in run["queues"]:
        nominal[cohort_of.get(q.name, q.name)] += q.nominal
    peaks = {c: p for c, p in run.get("cohortPeak", {}).items() if nominal[c]}
    if not peaks:
        return {"peakPctOfNominal": None, "overCommitted": {}}
    fullest = max(peaks, key=lambda c: peaks[c] / nominal[c])
    return {
        "peakPctOfNominal": peaks[fullest] * 100 / nominal[fullest],
        "overCommitted": {c: [p, nominal[c]] for c, p in peaks.items() if p > nominal[c]},
    }


def _writes(ctl: Mapping[str, Any], per: int) -> Object:
    writes: Counter[str] = Counter()
    for method, kind, n in ctl["requests"]:
        if method != "GET":
            writes[f"{method} {kind}"] += n
    total = sum(writes.values())
    workload = sum(n for what, n in writes.items() if what.split()[1].startswith("workloads."))
    return {
        "total": total,
        "perAdmission": total / per,
        "workloadPerAdmission": workload / per,
        "byKind": dict(writes.most_common()),
        "workloadByPurposePerAdmission": {
            k: n / per for k, n in Counter(ctl.get("workloadWrites", {})).most_common()
        },
        "refused": ctl["refused"],
        "eventsDropped": ctl["droppedEvents"],
        "eventsDroppedByReason": ctl.get("eventsDropped", {}),
    }


def _cycles(ctl: Mapping[str, Any]) -> Object:
    cycles: list[float] = ctl["cycleS"]
    bins = cycles_by_pending(cycles, ctl["cyclePending"])
    histogram, lower = [], 0.0
    for bound in (*HISTOGRAM_MS, float("inf")):
        n = sum(lower <= c * 1e3 < bound for c in cycles)
        histogram.append([f"< {bound:g} ms" if bound != float("inf") else f">= {lower:g} ms", n])
        lower = bound
    return {
        "count": len(cycles),
        **{f"p{p}Ms": pct(cycles, p) * 1e3 for p in (50, 90, 99)},
        "histogram": histogram,
        "maxPending": max(ctl["cyclePending"], default=0),
        "byPending": {
            str(centre): {"cycles": len(ts), "p50Ms": statistics.median(ts) * 1e3}
            for centre, ts in bins.items()
        },
        "ratioLargestTo1k": scaling_ratio(bins),
        **_per_head(cycles, ctl),
    }


def _per_head(cycles: list[float], ctl: Mapping[str, Any]) -> Object:
    """Cycle time per head by pending: a cycle's length grows with its heads (one per
    ClusterQueue with work), which the pending count alone does not separate from the queues'
    depth. Revisions before the heads were recorded give nothing."""
    heads = ctl.get("cycleHeads")
    if not heads:
        return {}
    bins = cycles_by_pending([c / h for c, h in zip(cycles, heads, strict=True)],
                             ctl["cyclePending"])  # fmt: skip
    return {
        "perHeadByPending": {
            str(centre): {"cycles": len(ts), "p50Us": statistics.median(ts) * 1e6}
            for centre, ts in bins.items()
        },
        "perHeadRatioLargestTo1k": scaling_ratio(bins),
    }


def _controller(ctl: Mapping[str, Any], workloads: int, admissions: int) -> Object:
    cpu = ctl["userS"] + ctl["sysS"]
    samples = ctl["rssSamples"]
    at_peak = max(samples, key=lambda s: s[2]) if samples else None
    return {
        "cpuS": cpu,
        "cpuMsPerWorkload": cpu * 1000 / max(1, workloads),
        # The thread CPU time of every cycle: the cycles' wall time is stretched by a busy box.
        "coreUsPerAdmission": ctl["coreCpuS"] * 1e6 / max(1, admissions),
        "peakRssMiB": ctl["maxrssMiB"],
        "rssEndMiB": ctl["rssEndMiB"],
        "peakPending": at_peak[2] if at_peak else 0,
        "rssAtPeakPendingMiB": at_peak[1] if at_peak else None,
        "rssMiBPer1kPending": rss_growth(samples),
    }


def show(f: Mapping[str, Any]) -> None:
    """Print the figures as the benchmark always has, with the scaling lines after them."""
    fair = ", fair sharing on" if f["fairSharing"] else ""
    print(f"mode {f['mode'].upper()}: {f['workloads']} workloads in {f['clusterQueues']} "
          f"ClusterQueues{fair}")  # fmt: skip
    if f["swept"]:
        print(f"  {f['swept']} admitted workloads finished by the runner's sweep (missed trigger)")
    if f["failures"]:
        print(f"  {len(f['failures'])} fake-job failures, e.g. {f['failures'][0]}")
    wall, admissions = f["wallS"], f["admissions"]
    print(f"controller wall time      {wall:8.1f} s  (Kueue's wallMs; process start to stop)")
    generation = f"(generation {f['generatedS']:.1f} s)"
    print(f"runner makespan           {f['makespanS']:8.1f} s  {generation}")
    print(f"admissions                {admissions:8d}  ({admissions / wall:.1f}/s over wall)")
    print(f"raw status PATCH rate     {f['rawPatchRate']:8.0f} /s (same server, 16 in flight)")
    print("time to admission (Admitted.lastTransitionTime - creationTimestamp, 1-s stamps):")
    for name, c in f["timeToAdmissionMs"].items():
        mean = float("inf") if c["mean"] is None else c["mean"]
        print(
            f"  {name:7s} n={c['count']:5d}  mean {mean:8.0f} ms  p50 {c['p50']:7.0f}  "
            f"p90 {c['p90']:7.0f}  p99 {c['p99']:7.0f}  | observed mean "
            f"{c['observedMean'] or 0:7.0f} ms  evictions {c['evictions']}"
        )
    print("evictions by victim, preemptor and reason:")
    show_preemptions(f["preemptions"])
    measure = "(Kueue's measure: status.flavorsUsage)"
    print(f"ClusterQueue CPU usage    {f['cqUsagePct']:8.1f} % of nominal {measure}")
    held = "(admission to Finished, as the runner saw it)"
    print(f"  held by admitted work   {f['heldPct']:8.1f} % {held}")
    _show_cohorts(f.get("cohorts") or {})
    _show_writes(f["writes"], admissions)
    _show_cycles(f["cycles"])
    _show_memory(f["controller"])
    server = f["server"]
    if server["cpuS"] is not None:
        rss = f"(peak RSS {server['maxrssMiB']:.0f} MiB)"
        print(f"API server CPU            {server['cpuS']:8.1f} s  {rss}")
    show_tail(f.get("tail"))


def _show_cohorts(c: Mapping[str, Any]) -> None:
    if c.get("peakPctOfNominal") is None:
        return
    order = "(the runner's view, in the watch's order)"
    print(f"  fullest cohort at peak  {c['peakPctOfNominal']:8.1f} % of its nominal {order}")
    for cohort, (peak, nominal) in sorted(c["overCommitted"].items()):
        print(f"  OVER-COMMITTED: {cohort} held {peak} CPU of {nominal}")


def _show_writes(w: Mapping[str, Any], admissions: int) -> None:
    per = max(1, admissions)
    print(f"controller writes         {w['total']:8d}  ({w['perAdmission']:.2f} per admission)")
    for what, n in w["byKind"].items():
        print(f"  {what:45s} {n:7d}  {n / per:.2f}/admission")
    print(f"  Workload writes per admission: {w['workloadPerAdmission']:.2f}")
    purposes = w["workloadByPurposePerAdmission"]
    shares = ", ".join(f"{k} {v:.2f}" for k, v in purposes.items())
    print(f"  Workload status writes by purpose, per admission: {shares or 'none'}")
    refused = ", ".join(f"{n} x {code}" for code, n in sorted(w["refused"].items()))
    print(f"  Workload writes refused by the server: {refused or 'none'}")
    dropped = ", ".join(f"{k} {n:.0f}" for k, n in sorted(w["eventsDroppedByReason"].items()))
    print(f"  Events dropped (queue of 1000 full): {w['eventsDropped']}  by reason: {dropped}")


def _show_cycles(c: Mapping[str, Any]) -> None:
    print(f"cycles with heads         {c['count']:8d}  p50 {c['p50Ms']:.2f} ms  "
          f"p90 {c['p90Ms']:.2f} ms  p99 {c['p99Ms']:.2f} ms")  # fmt: skip
    for label, n in c["histogram"]:
        print(f"  {label:10s} {n:7d}")
    near = ", ".join(f"~{int(k):,} {v['p50Ms']:.2f} ms (n={v['cycles']})"
                     for k, v in c["byPending"].items())  # fmt: skip
    print(f"cycle p50 by pending      {near or 'no bin reached'}  (max {c['maxPending']:,} pending;"
          f" bins around {', '.join(f'{x:,}' for x in CENTERS)})")  # fmt: skip
    ratio = c["ratioLargestTo1k"]
    print(f"  p50(largest)/p50(~1,000) {'n/a' if ratio is None else f'{ratio:.2f}'}")
    if "perHeadByPending" in c:
        per_head = c["perHeadByPending"].items()
        near = ", ".join(f"~{int(k):,} {v['p50Us']:.0f} us" for k, v in per_head)
        ratio = c["perHeadRatioLargestTo1k"]
        print(f"cycle p50 per head        {near or 'no bin reached'}  p50(largest)/p50(~1,000) "
              f"{'n/a' if ratio is None else f'{ratio:.2f}'}")  # fmt: skip


def _show_memory(m: Mapping[str, Any]) -> None:
    print(f"controller CPU            {m['cpuS']:8.1f} s  ({m['cpuMsPerWorkload']:.2f} ms per "
          "workload)")  # fmt: skip
    print(f"  scheduling core         {m['coreUsPerAdmission']:8.0f} us CPU per admission")
    print(f"controller peak RSS       {m['peakRssMiB']:8.0f} MiB  (end {m['rssEndMiB']:.0f} MiB)")
    if m["rssAtPeakPendingMiB"] is not None:
        growth = m["rssMiBPer1kPending"]
        slope = "n/a" if growth is None else f"{growth:.1f} MiB per 1,000 pending"
        at = f"({m['peakPending']:,} pending; growth {slope}, linear fit up to the peak)"
        print(f"  RSS at peak pending     {m['rssAtPeakPendingMiB']:8.0f} MiB  {at}")


def check(f: Mapping[str, Any], rangespec: Object | None) -> bool:
    """Kueue's range spec, if any; a fake-job failure or an over-committed cohort fails the
    run either way."""
    ok = not f["failures"] and not (f.get("cohorts") or {}).get("overCommitted")
    if rangespec is None:
        return ok
    print("range spec:")
    wall, limit = f["wallS"], rangespec["cmd"]["maxWallMs"] / 1000
    ok &= _gate(f"wall {wall:.1f} s <= {limit:g} s", wall <= limit)
    usage = f["cqUsagePct"]
    for cls, floor in (rangespec.get("clusterQueueClassesMinUsage") or {}).items():
        ok &= _gate(f"{cls} usage {usage:.1f} % >= {floor} %", usage >= floor)
    for cls, ceiling in (rangespec.get("wlClassesMaxAvgTimeToAdmissionMs") or {}).items():
        mean = (f["timeToAdmissionMs"].get(cls) or {}).get("mean")
        mean = float("inf") if mean is None else mean
        ok &= _gate(f"{cls} mean TTA {mean:.0f} ms <= {ceiling} ms", mean <= ceiling)
    return ok


def _gate(text: str, passed: bool) -> bool:
    print(f"  {'PASS' if passed else 'FAIL'}  {text}")
    return passed


def figures(report: Mapping[str, Any]) -> dict[str, float]:
    """What ``--compare`` puts side by side (lower is better for each)."""
    server = report["server"]["cpuS"]
    return {
        "wall s": report["wallS"],
        "controller CPU ms/workload": report["controller"]["cpuMsPerWorkload"],
        "core CPU us/admission": report["controller"]["coreUsPerAdmission"],
        **({"API server CPU s": server} if server is not None else {}),
        "Workload writes/admission": report["writes"]["workloadPerAdmission"],
        "writes/admission": report["writes"]["perAdmission"],
        # in us: compare prints one decimal
        "cycle p50 us": report["cycles"]["p50Ms"] * 1e3,
        "cycle p99 us": report["cycles"]["p99Ms"] * 1e3,
        "controller peak RSS MiB": report["controller"]["peakRssMiB"],
        # evicted work runs again: quota spent twice, and a write each way
        "evictions": sum(c["evictions"] for c in report["timeToAdmissionMs"].values()),
    }
