"""Hot-swap re-placement time on ``kq dev --profile s2``: from a node failure to the recovered
workload's pods all Running on healthy slices, in wall and sandbox time.

Two cases, as story S2 tells them: a free slice exists (the documented quota 32, low alone,
a node under low fails), and none does (quota 64, both JobSets, a node under high fails, low is
preempted). The node fails by its Ready condition turning Unknown through the API, which the
sandbox treats like ``kq dev node fail``; the clock starts when that write returns.

    .venv/bin/python benchmarks/hotswap.py [--speed 20] [--speed 1] [--runs 3] [--cpu]

The recovery is CPU-bound in kq dev's one event loop, so on a loaded machine the wall figures
mostly measure the wait for a CPU: ``--cpu`` also prints kq dev's own CPU time over each
recovery and its time waiting on the run queue (Linux schedstat), which compare across loads.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.resources import NODES, PODS
from kq.sandbox.readyline import stop, wait_for_kubeconfig

REPO = Path(__file__).resolve().parent.parent
MANIFESTS = REPO / "examples" / "s2" / "kueue-hotswap.yaml"
POOL = "cloud.google.com/gke-nodepool"
TRACE = "--trace" in sys.argv


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(on a CPU, waiting for one) of every thread of process ``pid`` so far, in seconds."""
    run = wait = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        on_cpu, queued, _ = stat.read_text().split()
        run, wait = run + int(on_cpu), wait + int(queued)
    return run / 1e9, wait / 1e9


def start_dev(work: Path, speed: float) -> tuple[subprocess.Popen[str], Path]:
    log = (work / "kq-dev.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "kq", "dev", "--data-dir", str(work / "dev"), "--fresh",
         "--profile", "s2", "--speed", str(speed)],
        stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO,
    )  # fmt: skip
    return process, wait_for_kubeconfig(process, work / "kq-dev.log", 60)


class PodView:
    """The JobSet's pods as one watch shows them: a poll loop would share the sandbox's single
    event loop with the recovery it measures, and add up to its period to every figure."""

    def __init__(self, jobset: str, pools: dict[str, str]) -> None:
        self.jobset = jobset
        self.pools = pools
        self.pods: dict[str, dict[str, Any]] = {}
        self.seen: dict[str, float] = {}

    def running_slices(self) -> set[str]:
        """The pools of the JobSet's Running pods, when all 8 run; else empty."""
        mine = [p for p in self.pods.values() if p["status"].get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]  # fmt: skip
        return {self.pools[p["spec"]["nodeName"]] for p in mine} if len(mine) == 8 else set()

    def note_milestones(self, started: float) -> None:
        """When each step of a recovery is first visible, in seconds after the failure."""
        pods = self.pods.values()
        steps = {
            "a pod failed": any(p["status"].get("phase") == "Failed" for p in pods),
            "new pods created": any(p["spec"].get("schedulingGates") for p in pods),
            "new pods pinned": any(
                "kubernetes.io/hostname" in (p["spec"].get("nodeSelector") or {})
                and not p["spec"].get("nodeName")
                for p in pods
            ),
        }
        for step, done in steps.items():
            if done and step not in self.seen:
                self.seen[step] = time.monotonic() - started

    def take(self, line: bytes) -> None:
        event = json.loads(line)
        pod = event["object"]
        name = pod["metadata"]["name"]
        if not name.startswith(f"{self.jobset}-"):
            return
        if event["type"] == "DELETED":
            self.pods.pop(name, None)
        else:
            self.pods[name] = pod


async def until_running(
    client: KubeClient,
    view: PodView,
    avoid: str = "",
    fail: Callable[[], Awaitable[None]] | None = None,
) -> tuple[set[str], float]:
    """Follow the pods until all 8 run on slices other than ``avoid``: their slices and when.

    With ``fail``, it is called once the watch shows all 8 running (the watch is then open, so
    no event of the recovery is missed) and the time counts from its return.
    """
    started = time.monotonic()
    query = [("watch", "true")]
    async with client.stream(PODS.path("default"), query) as lines:
        async for line in lines:
            if not line.strip():
                continue
            view.take(line)
            if fail is None:
                view.note_milestones(started)
            found = view.running_slices()
            if found and fail is not None:
                await fail()
                fail, started = None, time.monotonic()
            elif found and avoid not in found:
                return found, time.monotonic() - started
    raise RuntimeError("the pod watch ended")


def set_up(kubeconfig: Path, quota: int) -> None:
    """The guide's manifests, as a user applies them, and the quota of the case."""
    kubectl = ["kubectl", "--kubeconfig", str(kubeconfig)]
    subprocess.run([*kubectl, "apply", "-f", str(MANIFESTS)], check=True, capture_output=True)
    if quota != 32:
        patch = {
            "op": "replace",
            "value": quota,
            "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota",
        }
        command = [*kubectl, "patch", "clusterqueue", "tpu-training-cq", "--type=json",
                   "-p", json.dumps([patch])]  # fmt: skip
        for attempt in range(5):
            # Right after the apply, kq's webhook or a concurrent status write may refuse it once.
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode == 0:
                return
            time.sleep(0.2 * (attempt + 1))
        raise RuntimeError(f"kubectl patch failed: {done.stderr.strip()}")


async def one_run(kubeconfig: Path, quota: int, pid: int) -> tuple[float, float, float]:
    """Seconds from the failure to the recovered JobSet running again: wall time, and kq dev's
    (process ``pid``) CPU time and run-queue wait over it."""
    async with await KubeClient.connect(kubeconfig) as client:
        nodes = (await client.list(NODES))["items"]
        pools = {n["metadata"]["name"]: n["metadata"]["labels"][POOL] for n in nodes}
        target = "high-jax-trillium" if quota == 64 else "low-jax-trillium"
        if quota == 64:
            await until_running(client, PodView("low-jax-trillium", pools))
        slices, _ = await until_running(client, PodView(target, pools))
        failed_pool = sorted(slices)[0]
        node = next(n for n, p in sorted(pools.items()) if p == failed_pool)
        view = PodView(target, pools)
        before: list[tuple[float, float]] = []

        async def fail() -> None:
            before.append(cpu_seconds(pid))
            await _fail(client, node)

        _, took = await until_running(client, view, failed_pool, fail)
        (run, wait), (run0, wait0) = cpu_seconds(pid), before[0]
        if TRACE:
            steps = sorted(view.seen.items(), key=lambda kv: kv[1])
            print("   ", ", ".join(f"{k} {v:.2f} s" for k, v in steps))
        return took, run - run0, wait - wait0


async def _fail(client: KubeClient, node: str) -> None:
    obj = await client.get(NODES, node)
    conditions: list[dict[str, Any]] = [
        {**c, "status": "Unknown", "reason": "NodeStatusUnknown",
         "message": "Kubelet stopped posting node status."} if c["type"] == "Ready" else c
        for c in obj["status"]["conditions"]
    ]  # fmt: skip
    await client.merge_patch(
        NODES, node, {"status": {"conditions": conditions}}, subresource="status"
    )


def measure(speed: float, quota: int, runs: int) -> list[tuple[float, float, float]]:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            process, kubeconfig = start_dev(Path(tmp), speed)
            try:
                set_up(kubeconfig, quota)
                times.append(asyncio.run(one_run(kubeconfig, quota, process.pid)))
            finally:
                stop(process, timeout=15)
                if process.stdout is not None:
                    process.stdout.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--speed", type=float, action="append", help="sandbox speed(s)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trace", action="store_true", help="print each step's time")
    parser.add_argument("--cpu", action="store_true", help="print kq dev's CPU time too")
    args = parser.parse_args()
    for speed in args.speed or [20.0, 1.0]:
        for quota, case in ((32, "free slice"), (64, "no free slice, low preempted")):
            results = measure(speed, quota, args.runs)
            wall = [w for w, _, _ in results]
            median = statistics.median(wall)
            print(
                f"speed {speed:g}x, {case}: re-placement median {median:.2f} s wall = "
                f"{median * speed:.1f} s sandbox (runs: {', '.join(f'{w:.2f}' for w in wall)})"
            )
            if args.cpu:
                cpu = ", ".join(f"{c:.3f}/{q:.3f}" for _, c, q in results)
                print(f"    kq dev on CPU / waiting for one, s (runs: {cpu}); load "
                      f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
