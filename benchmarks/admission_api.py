"""Mode B benchmark: the admission controller against an API server, on a scaled-down mix.

One cohort of 6 ClusterQueues (20 CPUs nominal, 100 borrowable each), 50 bare Workloads per
queue in the baseline's proportions (35 small, 10 medium, 5 large, priorities 50/100/200), all
created up front. A fake job controller marks each Workload Finished ``runtimeMs`` after it
is admitted. Prints wall time, admissions/s and API writes per admission.

    .venv/bin/python benchmarks/admission_api.py [--kubeconfig PATH] [--per-cq 50] [--cqs 6]

Without ``--kubeconfig`` it starts the embedded ``kq apiserver`` on a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kq.controllers.admission import AdmissionController
from kq.runtime.client import ClientSettings, KubeClient, retry_on_conflict
from kq.runtime.errors import ApiError
from kq.runtime.informer import Informer
from kq.runtime.resources import (
    CLUSTER_QUEUES,
    COHORTS,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from kq.runtime.store import Change

KUEUE = "kueue.x-k8s.io/v1beta1"
# (name, share of the 50 per queue, runtime ms, cpu, priority), as benchmarks/admission.py.
MIX = (("small", 0.7, 200, 1, 50), ("medium", 0.2, 500, 5, 100), ("large", 0.1, 1000, 20, 200))
SETTINGS = ClientSettings(qps=5000, burst=5000)


@contextmanager
def embedded_server() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as data:
        process = subprocess.Popen(
            [sys.executable, "-m", "kq", "apiserver", "--data-dir", data],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                paths = [w for w in line.split() if w.endswith("kubeconfig")]
                if "ready" in line and paths:
                    yield Path(paths[-1])
                    break
            else:
                raise RuntimeError("kq apiserver did not become ready")
        finally:
            process.terminate()
            process.wait(timeout=10)


def cluster_queue(name: str) -> dict[str, Any]:
    quota = {"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohort": "bench",
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [quota]}],
                }
            ],
        },
    }


def workload(ns: str, name: str, cpu: int, priority: int) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": str(cpu)}}}
    template = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"namespace": ns, "name": name},
        "spec": {
            "queueName": "lq",
            "priority": priority,
            "podSets": [{"name": "main", "count": 1, "template": template}],
        },
    }


async def setup(client: KubeClient, cqs: int, per_cq: int) -> dict[str, float]:
    """Queues and workloads; returns each workload's runtime in seconds."""
    await client.create(
        RESOURCE_FLAVORS,
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
    )
    await client.create(
        COHORTS, {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "bench"}}
    )
    runtimes: dict[str, float] = {}
    bodies = []
    for q in range(cqs):
        ns = f"bench-{q}"
        await client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        await client.create(CLUSTER_QUEUES, cluster_queue(f"cq-{q}"))
        lq = {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"namespace": ns, "name": "lq"},
        }
        await client.create(LOCAL_QUEUES, {**lq, "spec": {"clusterQueue": f"cq-{q}"}})
        for name, share, runtime_ms, cpu, priority in MIX:
            for i in range(round(per_cq * share)):
                bodies.append(workload(ns, f"{name}-{i}", cpu, priority))
                runtimes[f"{ns}/{name}-{i}"] = runtime_ms / 1000
    limit = asyncio.Semaphore(32)

    async def create(body: dict[str, Any]) -> None:
        async with limit:
            await client.create(WORKLOADS, body)

    await asyncio.gather(*(create(b) for b in bodies))
    return runtimes


def is_true(obj: dict[str, Any], type_: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conditions)


class FakeJobs:
    """Marks a Workload Finished ``runtime`` after each admission that is still current then."""

    def __init__(self, client: KubeClient, runtimes: dict[str, float]) -> None:
        self.client = client
        self.runtimes = runtimes
        self.informer = Informer(client, WORKLOADS)
        self.informer.add_handler(self.changed)
        self.failed: set[str] = set()
        self._timers: set[asyncio.Task[None]] = set()

    def changed(self, change: Change) -> None:
        obj, old = change.obj, change.old
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        if is_true(obj, "Finished"):
            return
        if is_true(obj, "Admitted") and (old is None or not is_true(old, "Admitted")):
            task = asyncio.create_task(self.finish(key, obj["metadata"]["uid"]))
            self._timers.add(task)
            task.add_done_callback(self._timers.discard)

    async def finish(self, key: str, uid: str) -> None:
        await asyncio.sleep(self.runtimes[key])
        ns, name = key.split("/")

        async def attempt() -> None:
            obj = await self.client.get(WORKLOADS, name, ns)
            if obj["metadata"]["uid"] != uid or not is_true(obj, "Admitted"):
                return
            if is_true(obj, "Evicted") or is_true(obj, "Finished"):
                return  # preempted meanwhile (a later admission restarts it), or done already
            done = {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done"}
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            conditions = [*obj["status"]["conditions"], {**done, "lastTransitionTime": stamp}]
            await self.client.merge_patch(
                WORKLOADS,
                name,
                {"status": {"conditions": conditions}},
                namespace=ns,
                resource_version=obj["metadata"]["resourceVersion"],
                subresource="status",
            )

        try:
            await retry_on_conflict(attempt)
        except ApiError as exc:
            # A lost finish would hang the run; make it visible instead.
            print(f"fake job {key} not finished: {exc}", file=sys.stderr)
            self.failed.add(key)


async def all_finished(client: KubeClient, total: int, jobs: FakeJobs) -> None:
    """Polls the API rather than trusting one watch: the end must be seen even if it lags."""
    while not jobs.failed:
        items = (await client.list(WORKLOADS))["items"]
        if sum(is_true(w, "Finished") for w in items) == total:
            return
        await asyncio.sleep(0.2)


async def bench(kubeconfig: Path, cqs: int, per_cq: int) -> None:
    async with (
        await KubeClient.connect(kubeconfig, SETTINGS) as client,
        await KubeClient.connect(kubeconfig, SETTINGS) as jobs_client,
    ):
        runtimes = await setup(client, cqs, per_cq)
        jobs = FakeJobs(jobs_client, runtimes)
        jobs_task = asyncio.create_task(jobs.informer.run())
        controller = AdmissionController(client, event_namespace="default")
        started = time.perf_counter()
        cpu = time.process_time()
        task = asyncio.create_task(controller.run())
        await all_finished(client, len(runtimes), jobs)
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu
        for running in (task, jobs_task):
            running.cancel()
        await asyncio.gather(task, jobs_task, return_exceptions=True)
    if jobs.failed:
        raise SystemExit(f"{len(jobs.failed)} fake jobs could not finish")
    writes = controller.writer.writes + controller.queue_status.writes
    admissions = controller.decisions.admissions
    print(f"workloads:             {len(runtimes)} in {cqs} ClusterQueues (1 cohort)")
    print(f"wall time:             {wall:.2f} s (all Finished)")
    print(f"admissions:            {admissions} ({admissions / wall:.1f}/s)")
    print(f"workload writes:       {controller.writer.writes}")
    print(f"queue status writes:   {controller.queue_status.writes}")
    print(f"writes per admission:  {writes / max(1, admissions):.2f}")
    print(f"process CPU:           {cpu:.2f} s (controller and fake jobs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument("--cqs", type=int, default=6)
    parser.add_argument("--per-cq", type=int, default=50)
    args = parser.parse_args()
    if args.kubeconfig is not None:
        asyncio.run(bench(args.kubeconfig, args.cqs, args.per_cq))
        return
    with embedded_server() as kubeconfig:
        asyncio.run(bench(kubeconfig, args.cqs, args.per_cq))


if __name__ == "__main__":
    main()
