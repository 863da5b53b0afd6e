"""The once-a-second refresh of the queue gauges against the number of pending workloads.

The controller refreshes the ClusterQueue gauges (``kq.controllers.queue_metrics``) on the
event loop every second, so its cost is a stall of everything else; it should not grow with
the pending workloads. Prints the median refresh time at 1,000, 10,000 and 100,000 pending
workloads in 300 ClusterQueues (Kueue's large-scale mix has 300).

    .venv/bin/python benchmarks/queue_metrics.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from kq.api.localqueue import LocalQueue
from kq.api.workload import PodSet, Workload
from kq.config import PluginsConfig
from kq.controllers.feed import CoreFeed
from kq.controllers.queue_metrics import QueueGauges
from kq.plugins import build_plugin_manager
from kq.scheduler.plugins import load_admission_plugins

QUEUES = 300
SIZES = (1_000, 10_000, 100_000)
PRIORITIES = (50, 100, 200)


def feed_with(pending: int) -> CoreFeed:
    """A feed whose queues hold ``pending`` workloads, spread over ``QUEUES`` queues."""
    plugins = load_admission_plugins(build_plugin_manager(PluginsConfig()))
    feed = CoreFeed(plugins, lambda: (), lambda: None)
    for q in range(QUEUES):
        feed.queues.set_cluster_queue(f"cq-{q}", "BestEffortFIFO")
        feed.queues.set_local_queue(LocalQueue("ns", f"lq-{q}", f"cq-{q}"))
    for i in range(pending):
        pod_set = PodSet("main", 1, {"cpu": 1000 * (1 + i % 3)})
        priority = PRIORITIES[i % 3]
        workload = Workload(
            "ns", f"w-{i}", f"uid-{i}", (pod_set,), f"lq-{i % QUEUES}", priority,
            creation_time=float(i),
        )  # fmt: skip
        feed.queues.add_workload(workload)
    return feed


def refresh_ms(feed: CoreFeed, rounds: int) -> float:
    gauges = QueueGauges()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        gauges.refresh(feed)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="refreshes timed per size")
    args = parser.parse_args()
    print(f"queue gauges' refresh, {QUEUES} ClusterQueues, median of {args.rounds}:")
    for size in SIZES:
        print(f"  {size:>7,} pending  {refresh_ms(feed_with(size), args.rounds):8.2f} ms")


if __name__ == "__main__":
    main()
