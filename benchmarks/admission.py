"""Mode A benchmark: the pure admission core on Kueue's scheduler perf-test baseline mix.

Virtual clock (``kq.simulate.engine``, the driver of ``kq simulate``): workloads arrive at
their creation interval and finish ``runtimeMs`` after admission; a cycle takes no virtual
time. Prints wall time, admissions/s, time-to-admission per class, cycle-time histogram, CPU
per admission, peak RSS, then a scaling run showing cycle time does not grow with the number
of pending workloads.

    .venv/bin/python benchmarks/admission.py [--scale-only | --no-scale] [--trace]
    .venv/bin/python benchmarks/admission.py --no-scale --compare REF [--rounds 3]

``--compare REF`` runs the same benchmark on git revision REF in a worktree, interleaved with
this tree's, and prints the ratios of the medians (this / REF) and whether the decisions
(time to admission per class, evictions, makespan) are identical.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compare import compare, load
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from kq import heap
from kq.api.clusterqueue import ClusterQueue, PreemptionPolicy
from kq.api.localqueue import LocalQueue
from kq.api.quotas import FlavorQuotas, ResourceGroup, ResourceQuota
from kq.api.resourceflavor import ResourceFlavor
from kq.api.selectors import LabelSelector
from kq.api.workload import PodSet, Workload
from kq.cache.cache import Cache
from kq.config import FairSharing, PluginsConfig
from kq.observability.logs import configure_logging
from kq.plugins import build_plugin_manager
from kq.queue.manager import QueueManager
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Victim
from kq.scheduler.plugins import AdmissionPlugins, load_admission_plugins
from kq.scheduler.scheduler import Scheduler
from kq.simulate.engine import Engine, Listener
from kq.simulate.trace import Arrival


@dataclass(frozen=True)
class WorkloadClass:
    name: str
    per_cq: int
    interval_ms: int
    runtime_ms: int
    cpu: int
    priority: int


BASELINE = (
    WorkloadClass("small", 350, 100, 200, 1, 50),
    WorkloadClass("medium", 100, 500, 500, 5, 100),
    WorkloadClass("large", 50, 1200, 1000, 20, 200),
)


def cluster(
    plugins: AdmissionPlugins, cohorts: int, per_cohort: int, nominal: int, borrowing: int | None
) -> Scheduler:
    cache = Cache()
    queues = QueueManager(plugins.strategies)
    cache.set_flavor(ResourceFlavor("default"))
    quota = ResourceQuota(nominal * 1000, None if borrowing is None else borrowing * 1000)
    group = ResourceGroup(("cpu",), (FlavorQuotas("default", {"cpu": quota}),))
    policy = PreemptionPolicy(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
    scheduler = Scheduler(cache, queues, plugins)
    for c in range(cohorts):
        for q in range(per_cohort):
            name = f"cq-{c}-{q}"
            cq = ClusterQueue(
                name,
                (group,),
                cohort=f"cohort-{c}",
                namespace_selector=LabelSelector(),
                preemption=policy,
                quotas={("default", "cpu"): quota},
            )
            cache.set_cluster_queue(cq)
            queues.set_cluster_queue(name, cq.queueing_strategy)
            queues.set_local_queue(LocalQueue(name, "lq", name))
            scheduler.namespace_labels[name] = {}
    return scheduler


def workload(namespace: str, name: str, cpu: int, priority: int, created: float) -> Workload:
    pod_set = PodSet("main", 1, {"cpu": cpu * 1000})
    return Workload(
        namespace, name, f"{namespace}.{name}", (pod_set,), "lq", priority, creation_time=created
    )


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


class _BaselineStats(Listener):
    """What mode A reports, gathered from the simulator's engine."""

    def __init__(self, spec: dict[str, tuple[str, Workload]]) -> None:
        self.spec = spec
        self.last_admission: dict[str, float] = {}  # Kueue's checker uses the last Admitted time
        self.evicted_per_class: dict[str, int] = {wc.name: 0 for wc in BASELINE}
        self.cycle_times: list[float] = []
        self.admissions = self.evictions = 0

    def admitted(self, decision: Admit, now: float) -> None:
        self.admissions += 1
        self.last_admission[decision.key] = now - self.spec[decision.key][1].creation_time

    def evicted(self, victim: Victim, preemptor: str, now: float) -> None:
        self.evictions += 1
        self.evicted_per_class[self.spec[victim.key][0]] += 1

    def cycled(self, result: CycleResult, now: float, seconds: float) -> None:
        self.cycle_times.append(seconds)


def baseline_arrivals(scheduler: Scheduler) -> list[Arrival]:
    """Each ClusterQueue's share of the baseline mix, in Kueue's generator order."""
    arrivals = []
    for cq in scheduler.queues.queues:
        for wc in BASELINE:
            for i in range(wc.per_cq):
                created = (i + 1) * wc.interval_ms / 1000
                wl = workload(cq, f"{wc.name}-{i}", wc.cpu, wc.priority, created)
                arrivals.append(Arrival(created, wl, wc.runtime_ms / 1000))
    return arrivals


def baseline_mix(
    plugins: AdmissionPlugins, offset_s: float = 0.0
) -> tuple[Scheduler, list[Arrival], _BaselineStats]:
    """The baseline cluster, its arrivals and a listener for them; ``offset_s``: each
    ClusterQueue's arrivals that much after the previous queue's (``instructions.py``)."""
    scheduler = cluster(plugins, 5, 6, nominal=20, borrowing=100)
    arrivals = baseline_arrivals(scheduler)
    if offset_s:
        index = {name: i for i, name in enumerate(scheduler.queues.queues)}
        arrivals = [replace(a, at=a.at + index[a.workload.namespace] * offset_s) for a in arrivals]
    spec = {a.workload.key: (a.workload.name.split("-")[0], a.workload) for a in arrivals}
    return scheduler, arrivals, _BaselineStats(spec)


def baseline(plugins: AdmissionPlugins) -> dict[str, Any]:
    scheduler, arrivals, stats = baseline_mix(plugins)
    spec = stats.spec
    total = len(spec)
    cpu_start = time.process_time()
    wall_start = time.perf_counter()
    engine = Engine(scheduler, arrivals, stats)
    with heap.settled():  # as kq simulate runs its engine
        now = engine.run()
    admissions, evictions, cycles = stats.admissions, stats.evictions, engine.cycles
    last_admission, evicted_per_class = stats.last_admission, stats.evicted_per_class
    cycle_times = stats.cycle_times
    wall = time.perf_counter() - wall_start
    cpu = time.process_time() - cpu_start
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("== baseline mix (5 cohorts x 6 CQs x 500 = 15,000 workloads), virtual clock ==")
    print(f"wall {wall:.2f} s   cpu {cpu:.2f} s   virtual makespan {now:.1f} s   cycles {cycles}")
    print(f"admissions {admissions} ({admissions / wall:,.0f}/s wall)   evictions {evictions}")
    print(
        f"CPU per admission {cpu / admissions * 1e6:.0f} us   "
        f"per workload {cpu / total * 1e6:.0f} us   peak RSS {rss_mib:.0f} MiB"
    )
    print("time to (last) admission, virtual s:           mean    p50    p90    p99")
    tta: dict[str, list[float]] = {wc.name: [] for wc in BASELINE}
    for key, waited in last_admission.items():
        tta[spec[key][0]].append(waited)
    for name, values in tta.items():
        print(
            f"  {name:<8} n={len(values):<6} evicted {evicted_per_class[name]:<5} "
            f"{statistics.mean(values):6.1f} "
            + " ".join(f"{percentile(values, p):6.1f}" for p in (50, 90, 99))
        )
    print("cycle time histogram (wall):")
    bounds = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, float("inf")]
    lower = 0.0
    for bound in bounds:
        count = sum(lower <= t < bound for t in cycle_times)
        label = f"< {bound * 1e3:g} ms" if bound != float("inf") else f">= {lower * 1e3:g} ms"
        print(f"  {label:<12} {count}")
        lower = bound
    print(
        f"  p50 {percentile(cycle_times, 50) * 1e6:.0f} us   "
        f"p99 {percentile(cycle_times, 99) * 1e6:.0f} us"
    )
    return {
        "wallMs": wall * 1e3,
        "cpuMs": cpu * 1e3,
        "maxrssMiB": rss_mib,
        "virtualMakespanS": now,
        "cycles": cycles,
        "admissions": admissions,
        "evictions": evictions,
        "cpuUsPerAdmission": cpu / admissions * 1e6,
        "cpuUsPerWorkload": cpu / total * 1e6,
        "cycleUs": {f"p{p}": percentile(cycle_times, p) * 1e6 for p in (50, 90, 99)},
        "classes": {
            name: {
                "count": len(values),
                "totalEvictions": evicted_per_class[name],
                "averageTimeToAdmissionMs": statistics.mean(values) * 1e3,
                **{f"p{p}TimeToAdmissionMs": percentile(values, p) * 1e3 for p in (50, 90, 99)},
            }
            for name, values in tta.items()
        },
    }


def scaling(plugins: AdmissionPlugins) -> dict[str, Any]:
    print("== scaling: 30 CQs, every head fits, cycle CPU time vs pending workloads ==")
    medians = {}
    for pending in (1_000, 10_000, 100_000):
        scheduler = cluster(plugins, 5, 6, nominal=10**9, borrowing=None)
        names = list(scheduler.queues.queues)
        made = {}
        for i in range(pending):
            wl = workload(names[i % len(names)], f"w{i}", 1, i % 7, float(i))
            made[wl.key] = wl
            scheduler.queues.add_workload(wl)
        times = []
        for cycle in range(210):
            started = time.process_time()  # CPU time: other processes on the box don't count
            result = scheduler.run_cycle(float(cycle))
            if cycle >= 10:  # warm-up
                times.append(time.process_time() - started)
            for decision in result.decisions:  # keep the pending count constant
                scheduler.cache.delete_workload(decision.key)
                scheduler.queues.add_workload(made[decision.key])
        medians[pending] = statistics.median(times)
        print(
            f"  pending {pending:>7,}: cycle p50 {medians[pending] * 1e6:7.0f} us  "
            f"p99 {percentile(times, 99) * 1e6:7.0f} us"
        )
    ratio = medians[100_000] / medians[1_000]
    print(f"  ratio p50(100k)/p50(1k) = {ratio:.2f} (target <= 1.2)")
    return {"cycleP50Us": {str(k): v * 1e6 for k, v in medians.items()}, "ratio100kTo1k": ratio}


class _Discard(SpanExporter):
    """Spans are built and ended as with a real exporter, then dropped."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def drain(plugins: AdmissionPlugins) -> dict[str, Any]:
    """Kueue PR #13729's shape: 1 CQ x 32 pending + 7 CQs x 2, capacity equal to demand."""
    print("== drain: 46 workloads, 8 CQs in one cohort, capacity = demand ==")
    rounds, admitted, cycles = 200, 0, 0
    cpu_start = time.process_time()
    for _ in range(rounds):
        scheduler = cluster(plugins, 1, 8, nominal=2, borrowing=None)
        names = list(scheduler.queues.queues)
        scheduler.cache.set_cluster_queue(
            replace(
                scheduler.cache.cluster_queues[names[0]],
                quotas={("default", "cpu"): ResourceQuota(32_000)},
            )
        )
        for i, name in enumerate(names):
            for j in range(32 if i == 0 else 2):
                scheduler.queues.add_workload(workload(name, f"w{j}", 1, 0, float(j)))
        while (result := scheduler.run_cycle(float(cycles))).decisions:
            cycles += 1
            admitted += result.admitted
    cpu = time.process_time() - cpu_start
    print(f"  {admitted // rounds} admitted in {cycles / rounds:.0f} cycles per round")
    print(f"  {cpu / admitted * 1e6:.0f} us CPU per admission (Kueue: 48-61 us; goal <= 1.2 ms)")
    return {"cyclesPerRound": cycles / rounds, "cpuUsPerAdmission": cpu / admitted * 1e6}


def _figures(report: Mapping[str, Any]) -> dict[str, float]:
    figures = {}
    if "baseline" in report:
        figures["baseline CPU us/admission"] = report["baseline"]["cpuUsPerAdmission"]
        figures["baseline cycle p50 us (wall)"] = report["baseline"]["cycleUs"]["p50"]
        figures["drain CPU us/admission"] = report["drain"]["cpuUsPerAdmission"]
    for pending, us in report.get("scaling", {}).get("cycleP50Us", {}).items():
        figures[f"scaling cycle p50 us at {pending}"] = us
    return figures


def _same_decisions(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Mode A's decisions must not depend on the revision: say so, or exit 1."""

    def decided(report: Mapping[str, Any]) -> object:
        base = report.get("baseline", {})
        keep = ("virtualMakespanS", "cycles", "admissions", "evictions", "classes")
        return {k: base.get(k) for k in keep}

    same = all(decided(a) == decided(b) for a, b in pairs)
    print(f"  decisions (TTA per class, evictions, makespan): {'identical' if same else 'DIFFER'}")
    if not same:
        sys.exit(1)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scale-only", action="store_true")
    parser.add_argument("--no-scale", action="store_true")
    parser.add_argument(
        "--trace", action="store_true", help="record every span (SDK provider, spans discarded)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--fair-sharing", action="store_true", help="with fair sharing on (both strategies)"
    )
    parser.add_argument("--compare", metavar="REF", help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (--compare)")
    args = parser.parse_args(argv)
    if args.compare is not None:
        passed = [a for a in ("--scale-only", "--no-scale", "--trace", "--fair-sharing")
                  if getattr(args, a[2:].replace("-", "_"))]  # fmt: skip
        pairs = compare("benchmarks/admission.py", passed, args.compare, args.rounds, _figures)
        _same_decisions(pairs)
        return
    configure_logging("info")  # as ``kq run``: the core's debug lines are not built
    if args.trace:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_Discard()))
        trace.set_tracer_provider(provider)
    strategies = FairSharing().preemption_strategies if args.fair_sharing else None
    plugins = load_admission_plugins(build_plugin_manager(PluginsConfig()), strategies)
    report: dict[str, Any] = {
        "mode": "A",
        "tracing": bool(args.trace),
        "fair_sharing": bool(args.fair_sharing),
    }
    report["loadBefore"] = load()
    print(report["loadBefore"])
    if not args.scale_only:
        report["drain"] = drain(plugins)
        report["baseline"] = baseline(plugins)
    if not args.no_scale:
        report["scaling"] = scaling(plugins)
    report["loadAfter"] = load()
    print(report["loadAfter"])
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
