"""kq's counterpart of Kueue's ``minimalkueue``: the admission and workload controllers only.

No job integrations, no webhooks, no leader election. On SIGTERM it stops and writes its
figures as JSON: wall time since start, CPU, peak RSS, requests by method and kind,
admissions and every cycle's duration.

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
from pathlib import Path

from kq.config import FairSharing, PluginsConfig
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


async def run(
    kubeconfig: Path, settings: ClientSettings, stats: Path, fair_sharing: bool = False
) -> None:
    cycles: list[float] = []

    def on_cycle(result: CycleResult, seconds: float) -> None:
        if result.decisions:
            cycles.append(seconds)

    async with await KubeClient.connect(kubeconfig, settings) as client:
        strategies = FairSharing().preemption_strategies if fair_sharing else None
        plugins = load_admission_plugins(build_plugin_manager(PluginsConfig()), strategies)
        controller = AdmissionController(
            client, event_namespace="default", on_cycle=on_cycle, plugins=plugins
        )
        core_cpu = _time_core(controller)
        # Kueue's minimalkueue runs its workload controller too; so does this.
        lifecycle = WorkloadLifecycle(client, controller.informers, EventRecorder(client))

        async def both() -> None:
            await asyncio.gather(controller.run(), lifecycle.run())

        task = asyncio.create_task(both())
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
        loop.add_signal_handler(signal.SIGINT, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await task
    usage = resource.getrusage(resource.RUSAGE_SELF)
    figures = {
        "wallS": time.perf_counter() - STARTED,
        "userS": usage.ru_utime,
        "sysS": usage.ru_stime,
        "maxrssMiB": usage.ru_maxrss / 1024,
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
    }
    stats.write_text(json.dumps(figures))  # noqa: ASYNC240 - once, at exit


def _time_core(controller: AdmissionController) -> list[float]:
    """The CPU time spent in the scheduling core (every cycle), summed into the list's one
    item: the cycles' durations are wall time, which a busy machine stretches."""
    scheduler = controller.feed.scheduler
    run_cycle = scheduler.run_cycle
    total = [0.0]

    def timed(now: float) -> CycleResult:
        started = time.thread_time()
        try:
            return run_cycle(now)
        finally:
            total[0] += time.thread_time() - started

    scheduler.run_cycle = timed  # type: ignore[method-assign]
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--qps", type=float, default=50.0)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--stats", type=Path, required=True)
    parser.add_argument("--profile", type=Path, help="write a cProfile dump here")
    parser.add_argument("--fair-sharing", action="store_true", help="fair sharing on")
    args = parser.parse_args()
    configure_logging("warning", json=True)
    settings = ClientSettings(qps=args.qps, burst=args.burst)
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    asyncio.run(run(args.kubeconfig, settings, args.stats, args.fair_sharing))
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(args.profile)


if __name__ == "__main__":
    main()
