"""``kq simulate`` throughput: simulated workloads per second of wall time.

Kueue's scheduler perf-test baseline mix (5 cohorts x 6 ClusterQueues; per queue 350 small,
100 medium and 50 large workloads: 15,000 in all) is written as a setup YAML and a CSV trace,
then run through ``kq simulate``'s own pipeline: read and check the files, simulate with the
recorder that feeds the report, compute the figures. Each phase is timed on its own.

``--budgets`` adds one kq Budget per cohort (2 cpu-hours per rolling 10 minutes, about two
thirds of what the cohort's workloads need) and gives every workload a maximum execution time
of the next whole second: the budgets' veto and ledgers then run on every cycle, and part of
the mix waits for the windows to move.

    .venv/bin/python benchmarks/simulate.py [--scale 0.1] [--repeat 3] [--budgets]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from kq.observability.logs import configure_logging
from kq.simulate.figures import compute
from kq.simulate.run import prepare, simulate
from kq.simulate.setup import load_setup

# (class, workloads per ClusterQueue, arrival interval ms, run time ms, cpu, priority): the
# numbers of Kueue's test/performance/scheduler/configs/baseline/generator.yaml.
BASELINE = (
    ("small", 350, 100, 200, 1, 50),
    ("medium", 100, 500, 500, 5, 100),
    ("large", 50, 1200, 1000, 20, 200),
)
COHORTS, QUEUES_PER_COHORT, NOMINAL_CPU, BORROWING_CPU = 5, 6, 20, 100
BUDGET_CPU_HOURS, BUDGET_WINDOW = "2", "10m"


def budget(cohort: int) -> dict[str, object]:
    return {"apiVersion": "kq.dev/v1alpha1", "kind": "Budget",
            "metadata": {"name": f"cohort-{cohort}"},
            "spec": {"target": {"kind": "Cohort", "name": f"cohort-{cohort}"},
                     "window": {"duration": BUDGET_WINDOW},
                     "resourceHours": {"cpu": BUDGET_CPU_HOURS}}}  # fmt: skip


def setup_objects(budgets: bool = False) -> list[dict[str, object]]:
    objects: list[dict[str, object]] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
         "metadata": {"name": "default"}},
    ]  # fmt: skip
    quota = {"name": "cpu", "nominalQuota": NOMINAL_CPU, "borrowingLimit": BORROWING_CPU}
    for cohort in range(COHORTS):
        for index in range(QUEUES_PER_COHORT):
            name = f"cq-{cohort}-{index}"
            spec = {
                "cohort": f"cohort-{cohort}",
                "namespaceSelector": {},
                "preemption": {"withinClusterQueue": "LowerPriority",
                               "reclaimWithinCohort": "Any"},
                "resourceGroups": [{"coveredResources": ["cpu"],
                                    "flavors": [{"name": "default", "resources": [quota]}]}],
            }  # fmt: skip
            objects.append({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
                            "metadata": {"name": name}, "spec": spec})  # fmt: skip
            objects.append({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
                            "metadata": {"namespace": name, "name": "lq"},
                            "spec": {"clusterQueue": name}})  # fmt: skip
        if budgets:
            objects.append(budget(cohort))
    return objects


def trace_rows(scale: float, budgets: bool = False) -> list[str]:
    rows = ["name,arrival,queue,runtime,priority,count,requests,maxExecutionSeconds"]
    for cohort in range(COHORTS):
        for index in range(QUEUES_PER_COHORT):
            namespace = f"cq-{cohort}-{index}"
            for name, per_queue, interval, runtime, cpu, priority in BASELINE:
                for i in range(max(1, round(per_queue * scale))):
                    arrival = (i + 1) * interval / 1000
                    limit = math.ceil(runtime / 1000) if budgets else ""
                    rows.append(f"{name}-{i},{arrival},{namespace}/lq,{runtime / 1000},"
                                f"{priority},1,cpu={cpu},{limit}")  # fmt: skip
    return rows


def once(work: Path) -> dict[str, float]:
    started = time.perf_counter()
    prepared = prepare("baseline", load_setup([work / "setup.yaml"]), work / "trace.csv")
    read = time.perf_counter() - started
    cpu_started = time.process_time()
    run = simulate(prepared)
    cpu = time.process_time() - cpu_started
    started = time.perf_counter()
    compute(run)
    figures = time.perf_counter() - started
    return {"workloads": len(prepared.arrivals), "read": read, "simulate": run.wall,
            "figures": figures, "cpu": cpu, "virtual": run.end, "cycles": run.recorder.cycles,
            "pending": len(run.pending)}  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the mix (1: 15,000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the median is reported")
    parser.add_argument("--budgets", action="store_true", help="one Budget per cohort")
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.repeat < 1:
        parser.error("--scale must be positive and --repeat at least 1")
    configure_logging("warning")  # as kq simulate: no debug line per decision
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        objects = setup_objects(args.budgets)
        (work / "setup.yaml").write_text(yaml.safe_dump_all(objects), encoding="utf-8")
        rows = trace_rows(args.scale, args.budgets)
        (work / "trace.csv").write_text("\n".join(rows) + "\n", "utf-8")
        runs = [once(work) for _ in range(args.repeat)]
    first = runs[0]
    budgets = f", a Budget per cohort ({BUDGET_CPU_HOURS} cpu-hours per {BUDGET_WINDOW})"
    print(f"== kq simulate, Kueue baseline mix: {first['workloads']:,.0f} workloads, "
          f"{COHORTS} cohorts x {QUEUES_PER_COHORT} ClusterQueues"
          f"{budgets if args.budgets else ''} ==")  # fmt: skip
    print(f"virtual makespan {first['virtual']:.1f} s   cycles {first['cycles']:,.0f}   "
          f"left pending {first['pending']:.0f}")  # fmt: skip
    for phase in ("read", "simulate", "figures"):
        values = [r[phase] for r in runs]
        print(f"  {phase:<9} median {statistics.median(values):7.2f} s wall  "
              f"(runs: {', '.join(f'{v:.2f}' for v in values)})")  # fmt: skip
    wall = statistics.median(r["simulate"] for r in runs)
    end_to_end = statistics.median(r["read"] + r["simulate"] + r["figures"] for r in runs)
    cpu = statistics.median(r["cpu"] for r in runs)
    print(f"simulated workloads per second of wall time: {first['workloads'] / wall:,.0f} "
          f"(simulation alone), {first['workloads'] / end_to_end:,.0f} (read + simulate + "
          f"figures)")  # fmt: skip
    print(f"  per CPU second of the simulation: {first['workloads'] / cpu:,.0f} (the figure "
          f"that does not depend on what else the machine runs)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
