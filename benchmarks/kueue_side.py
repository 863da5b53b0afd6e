"""B2 side by side with Kueue: the same runner and mix, kq's controller or Kueue's
``minimalkueue``, each on a fresh real kube-apiserver, writes counted at the server.

Kueue's binary comes from its source (``--kueue-src``, a checkout of kubernetes-sigs/kueue
at v0.19.2): built once with its client limits lifted, since ``minimalkueue`` hard-codes
QPS 50 / burst 100 (B1) and B2 is unthrottled. Rounds alternate kq, Kueue, kq, ... and the
medians are compared. The server's ``apiserver_request_total`` counts every write by verb,
resource and subresource; the runner's own requests (creates, ``Finished``, and for Kueue the
eviction completions Kueue's runner makes) are subtracted, so what is left is the
controller's. ``coreUsPerAdmission`` is the scheduling core's CPU: the thread CPU time of
kq's cycles (each one synchronous call of the core) and Kueue's ``Scheduler.schedule`` in its
own CPU profile (``go tool pprof``). ``explainedShare`` is the share of Workloads that said
why they wait (``QuotaReserved=False``) before their first admission.

    .venv/bin/python benchmarks/kueue_side.py --kueue-src DIR [--scale 0.2] [--rounds 2]
        [--kq-requeue-period 0]   # kq retries at once (default: a second later, as Kueue)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from compare import load
from perf_report import (
    cohort_peaks,
    preemptions,
    quota_in_use,
    show_preemptions,
    time_to_admission,
)
from scheduler_perf import HERE, PROBE_PATCHES, QueueSpec, bench, load_config

sys.path.insert(0, str(HERE.parent))
from tests.realk8s.plane import ControlPlane, real_control_plane

CACHE = Path(tempfile.gettempdir()) / "kq-kueue-side"
MAIN = Path("test/performance/scheduler/minimalkueue/main.go")
LIMITS = re.compile(r"kubeConfig\.QPS = 50\n(\s*)kubeConfig\.Burst = 100")
SAMPLE = re.compile(r"^apiserver_request_total\{([^}]*)\} (\S+)$", re.M)
LABEL = re.compile(r'(\w+)="([^"]*)"')
WRITES = ("POST", "PUT", "PATCH", "DELETE", "APPLY")
Key = tuple[str, str]  # (verb, resource[/subresource])
SCHEDULE = "sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).schedule"


def build_kueue(src: Path) -> Path:
    """minimalkueue with QPS and burst of 1e6, cached by the source's commit."""
    commit = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    binary = CACHE / f"minimalkueue-{commit[:12] or 'tree'}"
    if binary.exists():
        return binary
    tree = CACHE / "src"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(src, tree, ignore=shutil.ignore_patterns(".git"))
    main = tree / MAIN
    text, n = LIMITS.subn(r"kubeConfig.QPS = 1e6\n\1kubeConfig.Burst = 1000000", main.read_text())
    if n != 1:
        raise SystemExit(f"{MAIN}: the QPS 50 / burst 100 lines were not found")
    main.write_text(text)
    subprocess.run(["go", "build", "-o", str(binary), f"./{MAIN.parent}"], cwd=tree, check=True)
    return binary


def server_writes(plane: ControlPlane) -> Counter[Key]:
    """Successful writes the server has served so far, by verb and resource."""
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    request = urllib.request.Request(
        f"{plane.server}/metrics", headers={"Authorization": f"Bearer {plane.token}"}
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        text = response.read().decode()
    out: Counter[Key] = Counter()
    for labels, value in SAMPLE.findall(text):
        got = dict(LABEL.findall(labels))
        if got.get("verb") not in WRITES or not got.get("code", "").startswith("2"):
            continue
        resource = got.get("resource", "")
        if got.get("subresource"):
            resource += "/" + got["subresource"]
        out[got["verb"], resource] += int(float(value))
    return out


def runner_writes(run: dict[str, Any]) -> Counter[Key]:
    """The runner's writes, by the same keys: its accepted status writes as it counted them
    (a refused retry is no write at the server either), the rest as its client sent them."""
    out: Counter[Key] = Counter()
    for method, kind, n in run["runnerRequests"]:
        if method == "POST":
            out[method, kind.split(".")[0]] += n
    status = sum(run["runnerStatusWrites"].values()) + PROBE_PATCHES
    out["PATCH", "workloads/status"] += status
    return out


def one_round(
    controller: str, binary: Path | None, queues: list[QueueSpec], requeue_period: float | None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as work, real_control_plane(Path(work)) as plane:
        profile = Path(work) / "cpu.pprof"
        argv = [str(binary), f"--cpuprofile={profile}"] if binary else None  # reads KUBECONFIG
        before = server_writes(plane)
        run = asyncio.run(
            bench(
                plane.kubeconfig,
                [],
                queues,
                "b2",
                controller_argv=argv,
                requeue_period=None if binary else requeue_period,
            )
        )
        served = server_writes(plane) - before
        core = schedule_seconds(binary, profile) if binary else run["controller"]["coreCpuS"]
    out = figures(controller, run, served)
    out["coreUsPerAdmission"] = core * 1e6 / max(1, out["admissions"])
    return out


def schedule_seconds(binary: Path, profile: Path) -> float:
    """Cumulative CPU seconds in Kueue's ``Scheduler.schedule``, read with ``go tool pprof``."""
    top = subprocess.run(
        ["go", "tool", "pprof", "-top", "-cum", "-nodecount=2000", str(binary), str(profile)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for line in top.splitlines():
        fields = line.split()
        if fields and fields[-1] == SCHEDULE:
            return _seconds(fields[3])
    raise SystemExit(f"{SCHEDULE} is not in Kueue's profile")


def _seconds(text: str) -> float:
    for unit, scale in (("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6), ("s", 1.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    return float(text)


def figures(controller: str, run: dict[str, Any], served: Counter[Key]) -> dict[str, Any]:
    records = run["records"].values()
    admissions = sum(r.admissions for r in records)
    ours = served.copy()
    ours.subtract(runner_writes(run))
    status = ours["PATCH", "workloads/status"] + ours["PUT", "workloads/status"]
    status += ours["APPLY", "workloads/status"]
    events = sum(n for (_, resource), n in ours.items() if resource == "events")
    return {
        "controller": controller,
        "wallS": run["makespanS"],
        "admissions": admissions,
        "evictions": sum(r.evictions for r in records),
        "cpuPerWorkloadMs": run["controller"]["procCpuS"] * 1000 / len(run["records"]),
        "workloadStatusWrites": status / max(1, admissions),
        # kq's controller clears an evicted bare Workload's reservation; for Kueue its runner
        # does, so this is the figure to compare.
        "withReleases": (status + run["runnerStatusWrites"].get("release", 0)) / max(1, admissions),
        "byPurpose": run["controller"].get("workloadWrites", {}),
        "explainedShare": run["explained"] / max(1, len(run["records"])),
        "eventWrites": events / max(1, admissions),
        "allWrites": sum(n for n in ours.values() if n > 0) / max(1, admissions),
        "writes": {f"{v} {r}": n for (v, r), n in sorted(ours.items()) if n > 0},
        "preemptions": preemptions(run),
        # Kueue's measure (ClusterQueue status) and the quota held as the runner saw it
        **quota_in_use(run),
        "cohortPeakPct": cohort_peaks(run)["peakPctOfNominal"] or 0.0,
        **_per_class(run),
    }


def _per_class(run: dict[str, Any]) -> dict[str, float]:
    """Evictions and mean time to admission per workload class: where the two differ."""
    out = {}
    for name, c in time_to_admission(run["records"]).items():
        out[f"evictions {name}"] = c["evictions"]
        out[f"ttaMeanS {name}"] = (c["mean"] or 0.0) / 1000
    return out


def report(rounds: list[dict[str, Any]]) -> None:
    names: tuple[str, ...] = ("wallS", "admissions", "evictions", "cpuPerWorkloadMs")
    names += ("workloadStatusWrites", "withReleases", "eventWrites", "allWrites", "explainedShare")
    names += ("coreUsPerAdmission", "cqUsagePct", "heldPct", "cohortPeakPct")
    names += tuple(k for k in rounds[0] if k.startswith(("evictions ", "ttaMeanS ")))
    by = {c: [r for r in rounds if r["controller"] == c] for c in ("kq", "kueue")}
    print(f"{'figure (median)':28s} {'kq':>10s} {'Kueue':>10s} {'kq/Kueue':>9s}")
    for name in names:
        kq = statistics.median(r[name] for r in by["kq"])
        kueue = statistics.median(r[name] for r in by["kueue"])
        print(f"{name:28s} {kq:10.2f} {kueue:10.2f} {kq / kueue if kueue else 0:9.2f}")
    for r in rounds:
        print(f"{r['controller']}: controller writes by verb and resource: {r['writes']}")
        if r["byPurpose"]:
            print(f"  Workload status writes by purpose: {r['byPurpose']}")
        print("  evictions by victim, preemptor and reason:")
        show_preemptions(r["preemptions"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kueue-src", type=Path, required=True, help="Kueue v0.19.2 checkout")
    parser.add_argument("--config", default="baseline")
    parser.add_argument("--scale", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--kq-requeue-period",
        type=float,
        help="a retry of kq's parked workloads waits this long, s (default: kq's, 1 as Kueue's)",
    )
    args = parser.parse_args()
    binary = build_kueue(args.kueue_src)
    queues = load_config(HERE / "configs" / args.config / "generator.yaml", args.scale)
    rounds = []
    period = args.kq_requeue_period
    paced = "kq's default pacing" if period is None else f"kq's retries paced by {period:g} s"
    print(f"B2 side by side, --scale {args.scale}, {paced}; {load()} at the start")
    for i in range(args.rounds):
        for controller in ("kq", "kueue"):
            kueue = binary if controller == "kueue" else None
            result = one_round(controller, kueue, queues, args.kq_requeue_period)
            rounds.append(result)
            per = result["workloadStatusWrites"]
            print(f"round {i + 1} {controller}: wall {result['wallS']:.1f} s, {per:.2f} per adm.")
    print(f"{load()} at the end")
    report(rounds)


if __name__ == "__main__":
    main()
