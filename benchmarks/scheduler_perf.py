"""Modes B1/B2: kq's admission controller against an API server on Kueue's perf-test mixes.

Three processes, as Kueue's harness: the API server (``kq apiserver`` on a fresh directory,
or ``--kubeconfig`` for another), the controller (``benchmarks/minimal_kq.py``, kq's
``minimalkueue``) and this runner, which plays Kueue's runner: it generates the queues and
bare Workloads of a generator config, finishes each Workload ``runtimeMs`` after it is
admitted (the fake job controller), records every Workload change, and stops once all are
Finished. B1 gives the controller Kueue's client limits (QPS 50, burst 100 per kind); B2 is
unthrottled. Prints wall time, admissions/s, time-to-admission per class, CQ usage, writes
per admission by kind, the cycle-time histogram, CPU per workload and peak RSS, then checks
the config's range spec.

    .venv/bin/python benchmarks/scheduler_perf.py [--mode b1|b2] [--config baseline]
        [--scale 0.1] [--kubeconfig PATH] [--fair-sharing]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from kq.api.quantity import parse_quantity
from kq.runtime.client import ClientSettings, KubeClient, retry_on_conflict
from kq.runtime.errors import ApiError
from kq.runtime.informer import Informer
from kq.runtime.resources import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from kq.runtime.store import Change

HERE = Path(__file__).parent
KUEUE = "kueue.x-k8s.io/v1beta1"
MODES = {"b1": (50.0, 100), "b2": (1e6, 1_000_000)}
# Kueue's runner client (envtest's limits).
RUNNER = ClientSettings(qps=1000, burst=2000)
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


# -- the recorder and fake job controller -------------------------------------------------


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
        self.usage = Usage()
        self.status_usage = Usage()
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
        finished = is_true(obj, "Finished")
        holds = not finished and (obj.get("status") or {}).get("admission") is not None
        if holds != record.holds:
            self.usage.move(record.cluster_queue, record.cpu if holds else -record.cpu, now)
            record.holds = holds
        if (
            not record.admissions
            and (condition(obj, "QuotaReserved") or {}).get("status") == "False"
        ):
            self.explained.add(key)
        evicted = is_true(obj, "Evicted")
        if evicted and not record.evicted:
            record.evictions += 1
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
        now = _now_rfc3339()
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
        while True:
            await asyncio.sleep(1.0)
            now = time.time()
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
            stamped = {**done, "message": "finished", "lastTransitionTime": _now_rfc3339()}
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


def _now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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
            await runner.client.create(WORKLOADS, workload(spec.name, name, template))


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
            "lastTransitionTime": _now_rfc3339(),
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


@contextmanager
def embedded_server(profile: Path | None = None) -> Iterator[tuple[Path, int]]:
    profiler = ["-m", "cProfile", "-o", str(profile)] if profile else []
    with tempfile.TemporaryDirectory() as data:
        server = ["-m", "kq", "apiserver", "--data-dir", data, "--history", "200000"]
        process = subprocess.Popen(
            [sys.executable, *profiler, *server],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                paths = [w for w in line.split() if w.endswith("kubeconfig")]
                if "ready" in line and paths:
                    yield Path(paths[-1]), process.pid
                    break
            else:
                raise RuntimeError("kq apiserver did not become ready")
        finally:
            process.terminate()
            process.wait(timeout=30)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def bench(
    kubeconfig: Path,
    server_pid: int | None,
    queues: list[QueueSpec],
    mode: str,
    profile: Path | None = None,
    fair_sharing: bool = False,
    controller_argv: list[str] | None = None,
) -> dict[str, Any]:
    """``controller_argv``: another controller than kq's (Kueue's minimalkueue), which gets
    the kubeconfig in ``KUBECONFIG``, writes no figures, and leaves evictions to the runner."""
    qps, burst = MODES[mode]
    async with await KubeClient.connect(kubeconfig, RUNNER) as client:
        patch_rate = await raw_patch_rate(client)
        await create_queues(client, queues)
        runner = Runner(client, complete_evictions=controller_argv is not None)
        runner.expected = sum(s.count * len(s.workloads) for spec in queues for s in spec.sets)
        watching = asyncio.gather(runner.informer.run(), runner.queues.run(), runner.sweep())
        await runner.informer.wait_synced()
        await runner.queues.wait_synced()
        server_cpu = cpu_seconds(server_pid) if server_pid else 0.0
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
                ],
                env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            )
            started = time.time()
            try:
                generators = [
                    asyncio.create_task(generate(runner, spec, wset, i))
                    for spec in queues
                    for i, wset in enumerate(spec.sets)
                ]
                await asyncio.gather(*generators)
                generated = time.time()
                await runner.done.wait()
                ended = time.time()
                controller_cpu = cpu_seconds(controller.pid)
            finally:
                controller.send_signal(signal.SIGTERM)
                await asyncio.to_thread(controller.wait, 60)
            controller_stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
            controller_stats["cpuS"] = controller_cpu
        server = {
            "cpuS": cpu_seconds(server_pid) - server_cpu if server_pid else None,
            "maxrssMiB": peak_rss_mib(server_pid) if server_pid else None,
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
        "usage": runner.usage,
        "statusUsage": runner.status_usage,
        "queues": queues,
        "failures": runner.failures,
        "swept": runner.swept,
        "controller": controller_stats,
        "runnerRequests": [[m, k, n] for (m, k), n in sorted(client.requests.items())],
        "runnerStatusWrites": dict(runner.status_writes),
        "explained": len(runner.explained),
        "server": server,
    }


# -- the report ------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else 0.0


def report(run: dict[str, Any], rangespec: Object | None) -> bool:
    records: dict[str, Record] = run["records"]
    ctl = run["controller"]
    queues: list[QueueSpec] = run["queues"]
    wall = ctl["wallS"]
    admissions = sum(r.admissions for r in records.values())
    by_class: dict[str, list[Record]] = defaultdict(list)
    for r in records.values():
        by_class[r.class_name].append(r)
    fair = ", fair sharing on" if run["fairSharing"] else ""
    print(
        f"mode {run['mode'].upper()}: {len(records)} workloads in {len(queues)} ClusterQueues{fair}"
    )
    if run["swept"]:
        print(
            f"  {run['swept']} admitted workloads finished by the runner's sweep (missed trigger)"
        )
    if run["failures"]:
        print(f"  {len(run['failures'])} fake-job failures, e.g. {run['failures'][0]}")
    print(f"controller wall time      {wall:8.1f} s  (Kueue's wallMs; process start to stop)")
    generation = f"(generation {run['generatedS']:.1f} s)"
    print(f"runner makespan           {run['makespanS']:8.1f} s  {generation}")
    print(f"admissions                {admissions:8d}  ({admissions / wall:.1f}/s over wall)")
    print(f"raw status PATCH rate     {run['rawPatchRate']:8.0f} /s (same server, 16 in flight)")
    print("time to admission (Admitted.lastTransitionTime - creationTimestamp, 1-s stamps):")
    tta_means: dict[str, float] = {}
    for name, rs in sorted(by_class.items(), key=lambda kv: -kv[1][0].cpu):
        official = [
            (r.admitted_stamp - r.created) * 1000
            for r in rs
            if r.admitted_stamp is not None and r.created is not None
        ]
        seen = [(r.admitted_seen - r.sent) * 1000 for r in rs if r.admitted_seen is not None]
        tta_means[name] = statistics.fmean(official) if official else float("inf")
        evictions = sum(r.evictions for r in rs)
        print(
            f"  {name:7s} n={len(rs):5d}  mean {tta_means[name]:8.0f} ms  "
            f"p50 {pct(official, 50):7.0f}  p90 {pct(official, 90):7.0f}  "
            f"p99 {pct(official, 99):7.0f}  | observed mean {statistics.fmean(seen):7.0f} ms  "
            f"evictions {evictions}"
        )
    elapsed = run["makespanS"]

    def mean_usage(usage: Usage) -> float:
        return statistics.fmean(
            usage.integral[q.name] * 100 / (q.nominal * elapsed) for q in queues
        )

    cq_usage = mean_usage(run["statusUsage"])
    held = mean_usage(run["usage"])
    measure = "(Kueue's measure: status.flavorsUsage)"
    print(f"ClusterQueue CPU usage    {cq_usage:8.1f} % of nominal {measure}")
    print(f"  held by admitted work   {held:8.1f} % (admission to Finished, as the runner saw it)")
    writes: Counter[str] = Counter()
    for method, kind, n in ctl["requests"]:
        if method != "GET":
            writes[f"{method} {kind}"] += n
    total = sum(writes.values())
    print(f"controller writes         {total:8d}  ({total / max(1, admissions):.2f} per admission)")
    for what, n in writes.most_common():
        print(f"  {what:45s} {n:7d}  {n / max(1, admissions):.2f}/admission")
    purposes = Counter(ctl.get("workloadWrites", {}))
    shares = ", ".join(f"{k} {n / max(1, admissions):.2f}" for k, n in purposes.most_common())
    print(f"  Workload status writes by purpose, per admission: {shares or 'none'}")
    refused = ", ".join(f"{n} x {code}" for code, n in sorted(ctl["refused"].items()))
    print(f"  Workload writes refused by the server: {refused or 'none'}")
    dropped = ", ".join(f"{k} {n:.0f}" for k, n in sorted(ctl.get("eventsDropped", {}).items()))
    print(f"  Events dropped (queue of 1000 full): {ctl['droppedEvents']}  by reason: {dropped}")
    cycles = ctl["cycleS"]
    print(f"cycles with heads         {len(cycles):8d}  p50 {pct(cycles, 50) * 1e3:.2f} ms  "
          f"p90 {pct(cycles, 90) * 1e3:.2f} ms  p99 {pct(cycles, 99) * 1e3:.2f} ms")  # fmt: skip
    bounds = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, float("inf"))
    lower = 0.0
    for bound in bounds:
        n = sum(lower <= c < bound for c in cycles)
        label = f"< {bound * 1e3:g} ms" if bound != float("inf") else f">= {lower * 1e3:g} ms"
        print(f"  {label:10s} {n:7d}")
        lower = bound
    core = ctl["coreCpuS"] * 1e6 / max(1, admissions)
    print(f"scheduling core CPU       {ctl['coreCpuS']:8.1f} s  ({core:.0f} us per admission)")
    cpu = ctl["userS"] + ctl["sysS"]
    per_workload = f"({cpu * 1000 / len(records):.2f} ms per workload)"
    print(f"controller CPU            {cpu:8.1f} s  {per_workload}")
    print(f"controller peak RSS       {ctl['maxrssMiB']:8.0f} MiB")
    server = run["server"]
    if server["cpuS"] is not None:
        rss = f"(peak RSS {server['maxrssMiB']:.0f} MiB)"
        print(f"API server CPU            {server['cpuS']:8.1f} s  {rss}")
    if rangespec is None:
        return not run["failures"]
    ok = not run["failures"]
    print("range spec:")
    limit = rangespec["cmd"]["maxWallMs"] / 1000
    ok &= _gate(f"wall {wall:.1f} s <= {limit:g} s", wall <= limit)
    for cls, floor in (rangespec.get("clusterQueueClassesMinUsage") or {}).items():
        ok &= _gate(f"{cls} usage {cq_usage:.1f} % >= {floor} %", cq_usage >= floor)
    for cls, ceiling in (rangespec.get("wlClassesMaxAvgTimeToAdmissionMs") or {}).items():
        mean = tta_means.get(cls, float("inf"))
        ok &= _gate(f"{cls} mean TTA {mean:.0f} ms <= {ceiling} ms", mean <= ceiling)
    return ok


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


def _gate(text: str, passed: bool) -> bool:
    print(f"  {'PASS' if passed else 'FAIL'}  {text}")
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=sorted(MODES), default="b1")
    parser.add_argument("--config", default="baseline")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="below 1: fewer workloads per queue; above 1: that many times the cohorts",
    )
    parser.add_argument("--kubeconfig", type=Path, help="an API server to use instead")
    parser.add_argument("--profile", type=Path, help="cProfile the controller into this file")
    parser.add_argument("--profile-server", type=Path, help="cProfile the API server into this")
    parser.add_argument("--timeline", type=Path, help="write each Workload's record here (JSON)")
    parser.add_argument("--fair-sharing", action="store_true", help="the controller shares fairly")
    args = parser.parse_args()
    folder = HERE / "configs" / args.config
    queues = load_config(folder / "generator.yaml", args.scale)
    spec_path = folder / "rangespec.yaml"
    rangespec = yaml.safe_load(spec_path.read_text()) if args.scale == 1.0 else None
    if args.kubeconfig is not None:
        run = asyncio.run(
            bench(args.kubeconfig, None, queues, args.mode, args.profile, args.fair_sharing)
        )
    else:
        with embedded_server(args.profile_server) as (kubeconfig, pid):
            run = asyncio.run(
                bench(kubeconfig, pid, queues, args.mode, args.profile, args.fair_sharing)
            )
    passed = report(run, rangespec)
    if args.timeline is not None:
        write_timeline(args.timeline, run)
    if rangespec is None:
        print("(range spec checked only at --scale 1)")
    raise SystemExit(0 if passed else 1)


if __name__ == "__main__":
    main()
