"""One storm: an embedded API server, ``kq run`` replicas, a flowing mix, a seeded fault plan.

Four loops run beside the faults: the generator submits the mix, the sampler LISTs every
Workload (one instant each) and checks the invariants, the fake job controller finishes what
ran long enough, and the supervisor restarts replicas that died, as a Deployment would. After
the storm the faults stop and everything must converge: each Workload finished, or pending
saying why, and each ClusterQueue's status saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kq.runtime.client import ClientSettings, KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import CLUSTER_QUEUES, JOBS, WORKLOADS, Resource
from tests.chaos import invariants
from tests.chaos.faults import KINDS, Cast, carry_out, plan
from tests.chaos.invariants import Ledger, holding, is_true, job_owner, key
from tests.chaos.processes import ApiServer, Election, Replica
from tests.chaos.report import Report
from tests.chaos.topology import QUEUES, Mix, Submission, manifests
from tests.harness import eventually

KQ_NAMESPACE = "kq-system"
STRICT = {q.name for q in QUEUES if q.strategy == "StrictFIFO"}


@dataclass(frozen=True)
class StormConfig:
    workdir: Path
    seed: int = 18
    duration: float = 20.0
    """Seconds of faults as planned; the mix flows until they are done."""
    replicas: int = 2
    submit_every: float = 0.15
    sample_every: float = 0.2
    converge_within: float = 40.0
    kinds: tuple[str, ...] = KINDS
    election: Election = field(default_factory=Election)


@dataclass
class World:
    """What the loops share: the submissions, the latest sample, what the samples showed."""

    config: StormConfig
    admin: KubeClient
    mix: Mix
    report: Report
    submitted: dict[str, Submission] = field(default_factory=dict)
    """Acknowledged creations, by namespace/name."""
    latest: list[dict[str, Any]] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    running_since: dict[str, float] = field(default_factory=dict)
    flowing: bool = True


def _resource(plural: str) -> Resource:
    namespaced = plural in ("localqueues", "jobs", "workloads")
    group = "" if plural == "namespaces" else "kueue.x-k8s.io"
    version = "v1" if plural == "namespaces" else "v1beta1"
    return Resource(group, version, plural, "", namespaced)


async def _create(admin: KubeClient, resource: Resource, body: dict[str, Any]) -> bool:
    """True once the object exists: created now, or by an earlier try whose answer was lost."""
    try:
        await admin.create(resource, body)
    except ApiError as exc:
        return exc.reason == "AlreadyExists"
    return True


async def _setup(admin: KubeClient) -> None:
    for plural, obj in [*manifests(), ("namespaces", {"metadata": {"name": KQ_NAMESPACE}})]:
        if not await _create(admin, _resource(plural), obj):
            raise RuntimeError(f"could not create {plural} {obj['metadata']['name']}")


async def _generate(world: World) -> None:
    backlog = [s for s in world.mix.never_fits() if s.namespace not in STRICT]
    while world.flowing:
        submission = backlog.pop(0) if backlog else world.mix.next()
        body = submission.body()
        resource = JOBS if submission.kind == "Job" else WORKLOADS
        if await _create(world.admin, resource, body):
            world.submitted[f"{submission.namespace}/{submission.name}"] = submission
            world.report.submitted += 1
        else:
            world.report.create_retries += 1
            backlog.append(submission)
        await asyncio.sleep(world.config.submit_every)  # the mix's arrival rate


async def _sample(world: World) -> None:
    while True:
        try:
            listing = await world.admin.list(WORKLOADS)
        except ApiError:
            world.report.failed_samples += 1
        else:
            world.latest = listing.get("items") or []
            world.ledger.observe(world.latest, QUEUES)
        await asyncio.sleep(world.config.sample_every)  # the sampling period


def _hold(world: World, obj: Mapping[str, Any]) -> float:
    name = job_owner(obj) or key(obj)
    submission = world.submitted.get(name)
    return submission.hold if submission else 1.0


async def _finish_jobs(world: World) -> None:
    """The fake job controller: a Workload admitted for its hold time has run to completion."""
    while True:
        now = time.monotonic()
        running = {o["metadata"]["uid"]: o for o in world.latest if _running(o)}
        world.running_since = {u: world.running_since.get(u, now) for u in running}
        for uid, obj in running.items():
            if now - world.running_since[uid] >= _hold(world, obj):
                # A conflict or an injected fault: the next round tries again.
                with contextlib.suppress(ApiError):
                    await _finish(world.admin, obj)
        await asyncio.sleep(0.1)  # the fake job controller's resync period


def _running(obj: Mapping[str, Any]) -> bool:
    return holding(obj) is not None and is_true(obj, "Admitted") and not is_true(obj, "Evicted")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _finish(admin: KubeClient, obj: Mapping[str, Any]) -> None:
    meta = obj["metadata"]
    owner = job_owner(obj)
    if owner is None:
        done = {
            "type": "Finished",
            "status": "True",
            "reason": "Succeeded",
            "message": "Job finished successfully",
            "lastTransitionTime": _now(),
        }
        conditions = [c for c in obj["status"]["conditions"] if c["type"] != "Finished"]
        patch = {
            "metadata": {"resourceVersion": meta["resourceVersion"]},
            "status": {"conditions": [*conditions, done]},
        }
        await admin.merge_patch(
            WORKLOADS, meta["name"], patch, namespace=meta["namespace"], subresource="status"
        )
        return
    name = owner.split("/", 1)[1]
    job = await admin.get(JOBS, name, meta["namespace"])
    if job["spec"].get("suspend") or (job.get("status") or {}).get("completionTime"):
        return  # not started yet, or already done
    await admin.merge_patch(
        JOBS, name, _job_done(job), namespace=meta["namespace"], subresource="status"
    )


def _job_done(job: Mapping[str, Any]) -> dict[str, Any]:
    """What the Job controller writes when every pod succeeded."""

    def cond(type_: str, message: str) -> dict[str, Any]:
        return {
            "type": type_,
            "status": "True",
            "reason": "CompletionsReached",
            "message": message,
            "lastTransitionTime": _now(),
            "lastProbeTime": _now(),
        }

    status = {
        "startTime": (job.get("status") or {}).get("startTime") or _now(),
        "completionTime": _now(),
        "succeeded": job["spec"]["completions"],
        "conditions": [
            cond("SuccessCriteriaMet", "Reached"),
            cond("Complete", "Reached expected number"),
        ],
    }
    return {"metadata": {"resourceVersion": job["metadata"]["resourceVersion"]}, "status": status}


async def _supervise(world: World, cast: Cast) -> None:
    """Restart replicas that died (not those a fault keeps down), as a Deployment would."""
    while True:
        for replica in cast.replicas:
            if replica.held_down:
                continue  # a fault has it
            if replica.reap():
                code = replica.exits[-1]
                world.report.exits[code] += 1
                if code != 1:
                    tail = replica.log_path.read_text(errors="replace")[-1500:]
                    world.report.violations.append(f"{replica.name} crashed, exit {code}: {tail}")
            if replica.process is None:
                replica.start()
                world.report.replica_restarts += 1
        await asyncio.sleep(0.1)  # the supervisor's period


async def _converged(world: World) -> bool:
    """Every acknowledged submission has its Workload, each settled, and each ClusterQueue's
    status counts only what waits for good (the Workloads that can never fit)."""
    try:
        items = (await world.admin.list(WORKLOADS)).get("items") or []
        queues = {
            q["metadata"]["name"]: q for q in (await world.admin.list(CLUSTER_QUEUES))["items"]
        }
    except ApiError:
        return False
    return not _unconverged(world, items, queues)


def _unconverged(
    world: World, items: list[dict[str, Any]], queues: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    have = {key(o) for o in items} | {j for o in items if (j := job_owner(o))}
    problems = [
        f"{name}: acknowledged, no Workload" for name in world.submitted if name not in have
    ]
    problems += [p for o in items if (p := invariants.unsettled(o))]
    for q in QUEUES:
        status = (queues.get(q.name) or {}).get("status") or {}
        # What waits for good: too big for the queue even when empty (never-fits, and some of
        # the mix in the smaller queues); each says so, as checked above.
        waiting = sum(
            o["metadata"]["namespace"] == q.name and not is_true(o, "Finished") for o in items
        )
        seen = (
            status.get("reservingWorkloads", 0),
            status.get("admittedWorkloads", 0),
            status.get("pendingWorkloads", 0),
        )
        if seen != (0, 0, waiting):
            want = (0, 0, waiting)
            problems.append(
                f"ClusterQueue {q.name}: reserving, admitted, pending {seen}, want {want}"
            )
    return problems


async def _storm(world: World, cast: Cast, report: Report) -> None:
    config = world.config
    faults = plan(config.seed, config.duration, config.kinds)
    report.plan = [f.describe() for f in faults]
    started = time.monotonic()
    for fault in faults:
        await asyncio.sleep(fault.gap)  # the calm before the fault, from the plan
        await carry_out(cast, fault)
    report.storm_seconds = time.monotonic() - started


async def _settle(world: World, report: Report) -> None:
    """Stop the mix, let everything converge, and record what did not."""
    world.flowing = False
    started = time.monotonic()
    try:
        await eventually(
            lambda: _converged(world),
            "convergence",
            within=world.config.converge_within,
            interval=0.2,
        )
        report.converge_seconds = time.monotonic() - started
    except AssertionError:
        items = (await world.admin.list(WORKLOADS)).get("items") or []
        queues = {
            q["metadata"]["name"]: q for q in (await world.admin.list(CLUSTER_QUEUES))["items"]
        }
        report.violations += [
            f"not converged: {p}" for p in _unconverged(world, items, queues)[:30]
        ]


def _judge(world: World, cast: Cast, report: Report) -> None:
    ledger = world.ledger
    report.violations[:0] = ledger.violations
    report.samples = ledger.samples
    report.admissions = sum(ledger.admissions.values())
    report.evictions = sum(ledger.evictions.values())
    report.finished = len(ledger.finished)
    report.injected = cast.injected
    report.timeline = cast.log
    report.handovers, report.recoveries = cast.handovers, cast.recoveries
    report.resumed_exits = cast.resumed_exits
    report.apiserver_starts = cast.apiserver.starts
    bound = cast.election.handover_bound
    for fault, took in cast.handovers:
        if took < 0 or took > bound + (1.5 if fault == "kill-leader" else 0):
            report.violations.append(
                f"{fault}: no new leader within {bound:.1f} s (took {took:.2f} s)"
            )
    for took in cast.resumed_exits:
        if took < 0 or took > 2 * world.config.election.retry_period + 1.0:
            report.violations.append(f"a resumed, replaced leader kept running ({took:.2f} s)")


async def run_storm(config: StormConfig) -> Report:
    """Run one storm end to end; the report holds the figures and every violation."""
    report = Report(seed=config.seed)
    apiserver = ApiServer(config.workdir / "apiserver")
    kubeconfig = await asyncio.to_thread(apiserver.start)
    replicas = [
        Replica(f"kq-{i}", config.workdir / f"kq-{i}", kubeconfig, KQ_NAMESPACE, config.election)
        for i in range(config.replicas)
    ]
    settings = ClientSettings(max_attempts=8)
    try:
        async with await KubeClient.connect(kubeconfig, settings) as admin:
            await _setup(admin)
            for replica in replicas:
                replica.start()
            cast = Cast(apiserver, replicas, config.election, admin, KQ_NAMESPACE)
            world = World(config, admin, Mix(config.seed), report)
            loops = [_generate(world), _sample(world), _finish_jobs(world), _supervise(world, cast)]
            tasks = [asyncio.create_task(loop) for loop in loops]
            try:
                await _storm(world, cast, report)
                await _settle(world, report)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            _judge(world, cast, report)
    finally:
        for replica in replicas:
            replica.kill()
        apiserver.close()
    return report
