"""kq's counterpart of Kueue's ``minimalkueue``: the admission and workload controllers only.

No job integrations, no webhooks, no leader election. On SIGTERM it stops and writes its
figures as JSON: wall time since start, CPU, peak RSS, requests by method and kind,
admissions, every cycle's duration with its heads and the pending workloads it left, and its RSS
with the pending count once a second (the scaling figures: cycle time and memory against
the number of pending workloads).

    .venv/bin/python benchmarks/minimal_kq.py --kubeconfig K --qps 50 --burst 100 --stats F
        [--fair-sharing]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import resource
import signal
import time
from collections.abc import Callable
from pathlib import Path

from kq import heap
from kq.config import FairSharing, KqConfig, PluginsConfig
from kq.controllers.admission import AdmissionController
from kq.controllers.workloads import WorkloadLifecycle
from kq.observability.logs import configure_logging
from kq.observability.metrics import REGISTRY
from kq.plugins import build_plugin_manager
from kq.runtime.client import ClientSettings, KubeClient
from kq.runtime.events import EventRecorder
from kq.scheduler.cycle import CycleResult
from kq.scheduler.plugins import load_admission_plugins

STARTED = time.perf_counter()
SAMPLE_PERIOD_S = 1.0


def rss_mib() -> float:
    """The resident set now (``ru_maxrss`` is only the peak), from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def sample(samples: list[tuple[float, float, int]], pending: Callable[[], int]) -> None:
    """Until cancelled: (seconds since start, RSS MiB, pending workloads) every period."""
    while True:
        samples.append((time.perf_counter() - STARTED, rss_mib(), pending()))
        await asyncio.sleep(SAMPLE_PERIOD_S)


async def run(
    kubeconfig: Path,
    settings: ClientSettings,
    stats: Path,
    fair_sharing: bool = False,
    requeue_period: float | None = None,
) -> None:
    """``requeue_period``: kq's pacing of parked workloads' retries; ``None``: kq's default."""
    cycles: list[float] = []
    heads: list[int] = []
    at: list[float] = []
    pending: list[int] = []
    samples: list[tuple[float, float, int]] = []

    core_cpu = [0.0]  # every cycle's thread CPU: wall time stretches on a busy machine

    def on_cycle(result: CycleResult, seconds: float, cpu: float) -> None:
        core_cpu[0] += cpu
        if result.decisions:
            cycles.append(seconds)
            heads.append(len(result.decisions))
            at.append(time.time())  # the runner lines cycles up with its records
            # After the cycle: its admitted heads have left the queues already.
            pending.append(controller.feed.queues.pending_total())

    async with await KubeClient.connect(kubeconfig, settings) as client:
        strategies = FairSharing().preemption_strategies if fair_sharing else None
        plugins = load_admission_plugins(
            build_plugin_manager(PluginsConfig()),
            strategies,
            requeue_period=KqConfig().requeue_period if requeue_period is None else requeue_period,
        )
        controller = AdmissionController(
            client, event_namespace="default", on_cycle=on_cycle, plugins=plugins
        )
        # Kueue's minimalkueue runs its workload controller too; so does this.
        lifecycle = WorkloadLifecycle(client, controller.informers, EventRecorder(client))

        async def settle() -> None:
            # As ``kq run`` does once its informers have listed (kq.runtime.process).
            await asyncio.gather(*(i.wait_synced() for i in controller.informers.values()))
            heap.settle()

        async def both() -> None:
            queues = controller.feed.queues
            await asyncio.gather(
                controller.run(), lifecycle.run(), sample(samples, queues.pending_total), settle()
            )

        task = asyncio.create_task(both())
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task
    rss_end = rss_mib()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    figures = {
        "wallS": time.perf_counter() - STARTED,
        "userS": usage.ru_utime,
        "sysS": usage.ru_stime,
        # The kernel updates the high-water mark lazily: it can trail the RSS just read.
        "maxrssMiB": max(usage.ru_maxrss / 1024, rss_end, *(s[1] for s in samples)),
        "admissions": controller.decisions.admissions,
        "refused": dict(controller.writer.refused),
        "droppedEvents": controller.writer.dropped_events,
        "workloadWrites": dict(controller.decisions.writes),
        "eventsDropped": {
            reason: REGISTRY.get_sample_value("kq_events_dropped_total", {"reason": reason}) or 0
            for reason in ("queue_full", "spam", "error")
        },
        "requests": [[m, k, n] for (m, k), n in sorted(client.requests.items())],
        "cycleS": cycles,
        "coreCpuS": core_cpu[0],
        "cycleHeads": heads,
        "cycleAt": at,
        "cyclePending": pending,
        "rssSamples": samples,
        "rssEndMiB": rss_end,
    }
    stats.write_text(json.dumps(figures))  # noqa: ASYNC240 - once, at exit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--qps", type=float, default=50.0)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--profile", type=Path, help="write a cProfile dump here")
    parser.add_argument("--fair-sharing", action="store_true", help="fair sharing on")
    parser.add_argument("--requeue-period", type=float, help="see kq.queue.pacing; kq's default")
    args = parser.parse_args()
    configure_logging("warning", json=True)
    settings = ClientSettings(qps=args.qps, burst=args.burst)
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    asyncio.run(run(args.kubeconfig, settings, args.stats, args.fair_sharing, args.requeue_period))
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile)


if __name__ == "__main__":
    main()
