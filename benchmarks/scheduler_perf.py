"""Modes B1/B2: kq's admission controller against an API server on Kueue's perf-test mixes.

Three processes, as Kueue's harness: the API server (``kq apiserver`` on a fresh directory,
or ``--kubeconfig`` for another), the controller (``benchmarks/minimal_kq.py``, kq's
``minimalkueue``) and this runner, which plays Kueue's runner: it generates the queues and
bare Workloads of a generator config, finishes each Workload ``runtimeMs`` after it is
admitted (the fake job controller), records every Workload change, and stops once all are
Finished. B1 gives the controller Kueue's client limits (QPS 50, burst 100 per kind); B2 is
unthrottled. Prints wall time, admissions/s, time-to-admission per class, CQ usage, writes
per admission by kind, the cycle-time histogram, cycle p50 by pending count, CPU per
workload, RSS (peak, end, growth per 1,000 pending), the run's tail of lowest-priority
admissions with each process's CPU in it (``perf_tail.py``) and the machine's load, then checks
the config's range spec (``perf_report.py``; the runner is ``perf_runner.py``).

    .venv/bin/python benchmarks/scheduler_perf.py [--mode b1|b2] [--config baseline]
        [--scale 0.1] [--kubeconfig PATH | --real] [--fair-sharing] [--json PATH]
    .venv/bin/python benchmarks/scheduler_perf.py --mode b2 --scale 0.1 --compare REF [--rounds 3]

``--real`` starts a fresh kube-apiserver + etcd as the tests do (tests/realk8s/build.sh
builds them). ``--compare REF`` runs this tree and REF interleaved, each on a fresh server
(benchmarks/compare.py); REF must have this script's ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from compare import compare, load
from perf_report import check, figures, show, summarize
from perf_runner import Record, Runner, now_rfc3339
from servers import cpu_seconds, embedded_server, peak_rss_mib, real_server

from kq import heap
from kq.runtime.client import ClientSettings, KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
)

HERE = Path(__file__).parent
KUEUE = "kueue.x-k8s.io/v1beta1"
MODES = {"b1": (50.0, 100), "b2": (1e6, 1_000_000)}
# Kueue's runner client (envtest's limits). Patient: at --scale 10 the real kube-apiserver
# has stalled creates for minutes, and a runner that gives up ends the run.
RUNNER = ClientSettings(qps=1000, burst=2000, request_timeout=120.0, max_attempts=20)
Object = dict[str, Any]


# -- the generator config ------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadTemplate:
    class_name: str
    runtime_ms: int
    priority: int
    request: int


@dataclass(frozen=True)
class WorkloadsSet:
    count: int
    interval_ms: int
    workloads: tuple[WorkloadTemplate, ...]


@dataclass(frozen=True)
class QueueSpec:
    name: str
    class_name: str
    cohort: str
    nominal: int
    borrowing: int | None
    reclaim: str
    within: str
    sets: tuple[WorkloadsSet, ...]


def load_config(path: Path, scale: float) -> list[QueueSpec]:
    """Kueue's generator schema. A ``scale`` below 1 multiplies every workloads-set count (a
    shorter run of the same queues); above 1 it multiplies the cohorts, so the queues and the
    workloads grow together as in Kueue's large-scale mix (10: 150,000 Workloads, 300 CQs)."""
    doc = yaml.safe_load(path.read_text())
    per_queue = min(scale, 1.0)
    cohorts = max(1, round(scale)) if scale > 1 else 1
    queues = []
    for cohort_set in doc["cohorts"]:
        for c in range(cohort_set["count"] * cohorts):
            cohort = f"{cohort_set['className']}-{c}"
            for qs in cohort_set["queuesSets"]:
                sets = tuple(
                    WorkloadsSet(
                        max(1, round(ws["count"] * per_queue)),
                        ws["creationIntervalMs"],
                        tuple(
                            WorkloadTemplate(
                                w["className"], w["runtimeMs"], w["priority"], w["request"]
                            )
                            for w in ws["workloads"]
                        ),
                    )
                    for ws in qs["workloadsSets"]
                )
                for q in range(qs["count"]):
                    queues.append(
                        QueueSpec(
                            f"{cohort}-{qs['className']}-{q}",
                            qs["className"],
                            cohort,
                            qs["nominalQuota"],
                            qs.get("borrowingLimit"),
                            qs.get("reclaimWithinCohort", "Never"),
                            qs.get("withinClusterQueue", "Never"),
                            sets,
                        )
                    )
    return queues


def cluster_queue(spec: QueueSpec) -> Object:
    quota: Object = {"name": "cpu", "nominalQuota": spec.nominal}
    if spec.borrowing is not None:
        quota["borrowingLimit"] = spec.borrowing
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": spec.name},
        "spec": {
            "cohort": spec.cohort,
            "namespaceSelector": {},
            "preemption": {
                "withinClusterQueue": spec.within,
                "reclaimWithinCohort": spec.reclaim,
            },
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [quota]}],
                }
            ],
        },
    }


def workload(ns: str, name: str, template: WorkloadTemplate) -> Object:
    requests = {"cpu": str(template.request)}
    container = {"name": "c", "image": "pause", "resources": {"requests": requests}}
    pod = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {
            "namespace": ns,
            "name": name,
            "labels": {"kq.dev/class": template.class_name},
        },
        "spec": {
            "queueName": "lq",
            "priority": template.priority,
            "podSets": [{"name": "main", "count": 1, "template": pod}],
        },
    }


# -- the run ---------------------------------------------------------------------------------


async def create_queues(client: KubeClient, queues: list[QueueSpec]) -> None:
    rf = {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    await client.create(RESOURCE_FLAVORS, rf)
    for spec in queues:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": spec.name}}
        await client.create(NAMESPACES, ns)
        await client.create(CLUSTER_QUEUES, cluster_queue(spec))
        lq = {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"namespace": spec.name, "name": "lq"},
            "spec": {"clusterQueue": spec.name},
        }
        await client.create(LOCAL_QUEUES, lq)


async def generate(runner: Runner, spec: QueueSpec, wset: WorkloadsSet, index: int) -> None:
    """One goroutine of Kueue's generator: sleep the interval, create, repeat."""
    started = time.monotonic()
    step = 0
    for i in range(wset.count):
        for template in wset.workloads:
            step += 1
            delay = started + step * wset.interval_ms / 1000 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            name = f"{template.class_name}-{index}-{i}"
            key = f"{spec.name}/{name}"
            runner.records[key] = Record(
                template.class_name,
                spec.name,
                template.request,
                template.runtime_ms / 1000,
                time.time(),
            )
            await _create(runner.client, workload(spec.name, name, template))


async def _create(client: KubeClient, body: dict[str, Any]) -> None:
    """Create one Workload of the mix: its name is new, so AlreadyExists can only answer a
    retry of this same create, which the saturated server carried out but answered too late
    (at scale 10 the real kube-apiserver does)."""
    try:
        await client.create(WORKLOADS, body)
    except ApiError as exc:
        if exc.status != 409 or exc.reason != "AlreadyExists":
            raise


PROBE_PATCHES = 400


async def raw_patch_rate(client: KubeClient, patches: int = PROBE_PATCHES) -> float:
    """Unconditioned Workload status merge patches per second, 16 at a time."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench-probe"}}
    await client.create(NAMESPACES, ns)
    probe = WorkloadTemplate("probe", 0, 0, 1)
    body = workload("bench-probe", "probe", probe)
    body["spec"]["queueName"] = "no-such-queue"
    await client.create(WORKLOADS, body)
    limit = asyncio.Semaphore(16)

    async def patch(i: int) -> None:
        cond = {
            "type": "Probe",
            "status": "True",
            "reason": "Probe",
            "message": str(i),
            "lastTransitionTime": now_rfc3339(),
        }
        async with limit:
            await client.merge_patch(
                WORKLOADS,
                "probe",
                {"status": {"conditions": [cond]}},
                namespace="bench-probe",
                subresource="status",
            )

    started = time.perf_counter()
    await asyncio.gather(*(patch(i) for i in range(patches)))
    return patches / (time.perf_counter() - started)


async def sample_cpu(
    samples: list[tuple[float, float | None, float, float]], server: list[int], controller: int
) -> None:
    """Each second: the time, and the server's, controller's and this runner's CPU so far."""
    while True:
        server_cpu = cpu_seconds(server) if server else None
        samples.append((time.time(), server_cpu, cpu_seconds([controller]), time.process_time()))
        await asyncio.sleep(1.0)


async def _until_done(runner: Runner, controller: subprocess.Popen[bytes]) -> None:
    """Wait for every workload to finish; a controller that dies first fails the run rather
    than leaving it waiting for admissions that will never come."""
    while not runner.done.is_set():
        if controller.poll() is not None:
            raise SystemExit(
                f"the controller exited ({controller.returncode}) before the run ended"
            )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(runner.done.wait(), 1.0)


async def bench(
    kubeconfig: Path,
    server_pids: list[int],
    queues: list[QueueSpec],
    mode: str,
    profile: Path | None = None,
    fair_sharing: bool = False,
    controller_argv: list[str] | None = None,
    requeue_period: float | None = None,
) -> dict[str, Any]:
    """``controller_argv``: another controller than kq's (Kueue's minimalkueue), which gets
    the kubeconfig in ``KUBECONFIG``, writes no figures, and leaves evictions to the runner;
    ``requeue_period``: kq's pacing of parked workloads' retries (``kq.queue.pacing``), kq's
    default if ``None``."""
    qps, burst = MODES[mode]
    async with await KubeClient.connect(kubeconfig, RUNNER) as client:
        patch_rate = await raw_patch_rate(client)
        await create_queues(client, queues)
        runner = Runner(client, complete_evictions=controller_argv is not None)
        # a ClusterQueue without a cohort is one of its own
        runner.cohort_of = {spec.name: spec.cohort or spec.name for spec in queues}
        runner.expected = sum(s.count * len(s.workloads) for spec in queues for s in spec.sets)
        watching = asyncio.gather(runner.informer.run(), runner.queues.run(), runner.sweep())
        await runner.informer.wait_synced()
        await runner.queues.wait_synced()
        # Kueue's runner is Go, whose collector does not stop it: with Python's defaults a
        # full collection over the runner's records stops it for up to 0.6 s.
        heap.settle()
        server_cpu = cpu_seconds(server_pids)
        with tempfile.TemporaryDirectory() as tmp:
            stats_path = Path(tmp) / "stats.json"
            controller = subprocess.Popen(  # noqa: ASYNC220 - started once, before timing
                controller_argv
                or [
                    sys.executable,
                    str(HERE / "minimal_kq.py"),
                    "--kubeconfig",
                    str(kubeconfig),
                    "--qps",
                    str(qps),
                    "--burst",
                    str(burst),
                    "--stats",
                    str(stats_path),
                    *(["--profile", str(profile)] if profile else []),
                    *(["--fair-sharing"] if fair_sharing else []),
                    *([] if requeue_period is None else ["--requeue-period", str(requeue_period)]),
                ],
                env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            )
            started = time.time()
            samples: list[tuple[float, float | None, float, float]] = []
            sampling = asyncio.create_task(sample_cpu(samples, server_pids, controller.pid))
            try:
                generators = [
                    asyncio.create_task(generate(runner, spec, wset, i))
                    for spec in queues
                    for i, wset in enumerate(spec.sets)
                ]
                await asyncio.gather(*generators)
                generated = time.time()
                await _until_done(runner, controller)
                ended = time.time()
                controller_cpu = cpu_seconds([controller.pid])
            finally:
                sampling.cancel()
                controller.send_signal(signal.SIGTERM)
                await asyncio.to_thread(controller.wait, 60)
            controller_stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
            controller_stats["procCpuS"] = controller_cpu
        server = {
            "cpuS": cpu_seconds(server_pids) - server_cpu if server_pids else None,
            "maxrssMiB": peak_rss_mib(server_pids) if server_pids else None,
        }
        await runner.close()
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
    for usage in (runner.usage, runner.status_usage):
        for cq in list(usage.cpu):
            usage.move(cq, 0, ended)
    return {
        "mode": mode,
        "fairSharing": fair_sharing,
        "rawPatchRate": patch_rate,
        "started": started,
        "generatedS": generated - started,
        "makespanS": ended - started,
        "records": runner.records,
        "preemptions": runner.preemptions,
        "usage": runner.usage,
        "cohortOf": runner.cohort_of,
        "cohortPeak": dict(runner.cohort_peak),
        "statusUsage": runner.status_usage,
        "queues": queues,
        "failures": runner.failures,
        "swept": runner.swept,
        "controller": controller_stats,
        "runnerRequests": [[m, k, n] for (m, k), n in sorted(client.requests.items())],
        "runnerStatusWrites": dict(runner.status_writes),
        "explained": len(runner.explained),
        "server": server,
        "cpuSamples": samples,
    }


def write_timeline(path: Path, run: dict[str, Any]) -> None:
    """Every Workload's record, times relative to the start, for plotting a run."""
    started = run["started"]
    rows = []
    for key, record in run["records"].items():
        row = {"key": key, **asdict(record)}
        for name in ("sent", "created", "admitted_seen", "finished_seen"):
            if row[name] is not None:
                row[name] -= started
        rows.append(row)
    path.write_text(json.dumps(rows))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mode", choices=sorted(MODES), default="b1")
    parser.add_argument("--config", default="baseline")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="below 1: fewer workloads per queue; above 1: that many times the cohorts",
    )
    parser.add_argument("--kubeconfig", type=Path, help="an API server to use instead")
    parser.add_argument(
        "--real", action="store_true", help="a fresh real kube-apiserver + etcd instead"
    )
    parser.add_argument("--profile", type=Path, help="cProfile the controller into this file")
    parser.add_argument("--profile-server", type=Path, help="cProfile the API server into this")
    parser.add_argument("--timeline", type=Path, help="write each Workload's record here (JSON)")
    parser.add_argument("--fair-sharing", action="store_true", help="the controller shares fairly")
    parser.add_argument(
        "--requeue-period",
        type=float,
        help="a retry of parked workloads waits this long, s (default kq's: 1; 0: at once)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--compare", metavar="REF", help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (--compare)")
    args = parser.parse_args(argv)
    if args.compare is not None:
        if args.kubeconfig is not None:
            parser.error("--compare starts a fresh server for every run: not with --kubeconfig")
        forwarded = ["--mode", args.mode, "--config", args.config, "--scale", str(args.scale)]
        forwarded += [a for a in ("--real", "--fair-sharing")
                   if getattr(args, a[2:].replace("-", "_"))]  # fmt: skip
        if args.requeue_period is not None:  # a revision from before the flag runs without it
            forwarded += ["--requeue-period", str(args.requeue_period)]
        compare("benchmarks/scheduler_perf.py", forwarded, args.compare, args.rounds, figures)
        return
    folder = HERE / "configs" / args.config
    queues = load_config(folder / "generator.yaml", args.scale)
    spec_path = folder / "rangespec.yaml"
    rangespec = yaml.safe_load(spec_path.read_text()) if args.scale == 1.0 else None
    before = load()
    with _server(args) as (kubeconfig, pids):
        run = asyncio.run(
            bench(
                kubeconfig,
                pids,
                queues,
                args.mode,
                args.profile,
                args.fair_sharing,
                requeue_period=args.requeue_period,
            )
        )
    summary = {**summarize(run), "server": {**run["server"], "real": args.real}}
    summary["loadBefore"], summary["loadAfter"] = before, load()
    show(summary)
    print(f"load before: {before}\nload after:  {summary['loadAfter']}")
    passed = check(summary, rangespec)
    if args.timeline is not None:
        write_timeline(args.timeline, run)
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    if rangespec is None:
        print("(range spec checked only at --scale 1)")
    raise SystemExit(0 if passed else 1)


@contextmanager
def _server(args: argparse.Namespace) -> Iterator[tuple[Path, list[int]]]:
    """The server the arguments ask for; a ``--kubeconfig`` one's processes are not ours to
    measure."""
    if args.kubeconfig is not None:
        yield args.kubeconfig, []
    elif args.real:
        with real_server() as server:
            yield server
    else:
        with embedded_server(args.profile_server) as server:
            yield server


if __name__ == "__main__":
    main(sys.argv[1:])
