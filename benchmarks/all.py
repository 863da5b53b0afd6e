"""Every figure the performance issues ask for, from one command: mode A (the pure core, with
its scaling run), B2 on the embedded API server and, with ``--real``, B2 on a real
kube-apiserver + etcd; each benchmark prints its own report, then one summary follows with
the machine's load.

    .venv/bin/python benchmarks/all.py [--scale 0.1] [--real] [--json PATH]
    .venv/bin/python benchmarks/all.py --scale 0.1 --compare REF [--rounds 3]

``--scale`` is scheduler_perf's (B runs only; 1 is Kueue's 15,000 Workloads, 10 ten times
the cohorts). ``--compare REF`` passes through: each benchmark runs interleaved with REF
and prints its ratios of medians (REF must have each one's ``--json``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compare import load

HERE = Path(__file__).parent


def runs(scale: float, real: bool) -> dict[str, list[str]]:
    """Each benchmark's name and its script with arguments."""
    b2 = ["scheduler_perf.py", "--mode", "b2", "--scale", str(scale)]
    chosen = {"A": ["admission.py"], "B2 embedded": b2}
    if real:
        chosen["B2 real kube-apiserver"] = [*b2, "--real"]
    return chosen


def run(script: list[str], extra: list[str]) -> int:
    """One benchmark, its output shown as it goes; returns its exit code (a failed range
    spec is 1, and the summary is still worth printing)."""
    print(f"\n=== {' '.join(script)} {' '.join(extra)}".rstrip(), flush=True)
    command = [sys.executable, str(HERE / script[0]), *script[1:], *extra]
    return subprocess.run(command, check=False).returncode


def summary_a(report: Mapping[str, Any]) -> list[str]:
    base, drain, scaling = report["baseline"], report["drain"], report["scaling"]
    p50 = ", ".join(f"{int(k):,}: {v:.0f} us" for k, v in scaling["cycleP50Us"].items())
    return [
        f"CPU per admission: baseline {base['cpuUsPerAdmission']:.0f} us, "
        f"drain {drain['cpuUsPerAdmission']:.0f} us; cycle p50 {base['cycleUs']['p50']:.0f} us",
        f"scaling cycle p50 by pending: {p50}; p50(100k)/p50(1k) {scaling['ratio100kTo1k']:.2f}",
    ]


def summary_b(r: Mapping[str, Any]) -> list[str]:
    w, c, m, s = r["writes"], r["cycles"], r["controller"], r["server"]
    server = "" if s["cpuS"] is None else f"; API server CPU {s['cpuS']:.1f} s"
    near = ", ".join(f"~{int(k):,}: {v['p50Ms']:.2f} ms" for k, v in c["byPending"].items())
    ratio = "n/a" if c["ratioLargestTo1k"] is None else f"{c['ratioLargestTo1k']:.2f}"
    growth = m["rssMiBPer1kPending"]
    slope = "n/a" if growth is None else f"{growth:.1f} MiB"
    return [
        f"{r['workloads']:,} workloads, {r['clusterQueues']} CQs: wall {r['wallS']:.1f} s, "
        f"{r['admissions'] / r['wallS']:.0f} admissions/s",
        f"controller CPU {m['cpuMsPerWorkload']:.2f} ms/workload{server}",
        f"writes per admission {w['perAdmission']:.2f} (Workload {w['workloadPerAdmission']:.2f})",
        f"cycle p50 {c['p50Ms']:.2f} ms, p99 {c['p99Ms']:.2f} ms; by pending (max "
        f"{c['maxPending']:,}): {near or 'none'}; p50(largest)/p50(~1,000) {ratio}",
        f"controller RSS peak {m['peakRssMiB']:.0f} MiB, end {m['rssEndMiB']:.0f} MiB, "
        f"at peak pending {m['rssAtPeakPendingMiB'] or 0:.0f} MiB; {slope} per 1,000 pending",
    ]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scale", type=float, default=1.0, help="scheduler_perf's, B runs")
    parser.add_argument("--real", action="store_true", help="also B2 on a real kube-apiserver")
    parser.add_argument("--json", type=Path, help="also write every report to this file")
    parser.add_argument("--compare", metavar="REF", help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (--compare)")
    args = parser.parse_args(argv)
    chosen = runs(args.scale, args.real)
    if args.compare is not None:
        codes = [run(s, ["--compare", args.compare, "--rounds", str(args.rounds)])
                 for s in chosen.values()]  # fmt: skip
        raise SystemExit(max(codes))
    before = load()
    reports: dict[str, Any] = {}
    codes = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, script) in enumerate(chosen.items()):
            out = Path(tmp) / f"{i}.json"
            codes.append(run(script, ["--json", str(out)]))
            reports[name] = json.loads(out.read_text()) if out.exists() else None
    after = load()
    print("\n=== summary ===")
    for name, report in reports.items():
        print(f"{name}:")
        lines = ["no report (failed)"] if report is None else (
            summary_a(report) if name == "A" else summary_b(report))  # fmt: skip
        for line in lines:
            print(f"  {line}")
    print(f"load before: {before}\nload after:  {after}")
    if args.json is not None:
        whole = {"reports": reports, "loadBefore": before, "loadAfter": after}
        args.json.write_text(json.dumps(whole, indent=2) + "\n")
    raise SystemExit(max(codes))


if __name__ == "__main__":
    main(sys.argv[1:])
