"""Kueue's gate ``SchedulerLongRequeueInterval`` through ``kq run`` and HTTP, on both backends:
a retry of parked workloads waits 10 s instead of 1 s (``kq.queue.pacing``)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from kq.runtime.client import KubeClient
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    finish,
    flavor,
    get_workload,
    local_queue,
    namespace,
    suffix,
    workload,
    workload_until,
)
from tests.harness import Cluster
from tests.kqrun import kq_run

pytestmark = pytest.mark.slow
GATE = "featureGates:\n  SchedulerLongRequeueInterval: true\n"


async def test_a_retry_after_a_release_waits_the_long_interval(
    cluster: Cluster, client: KubeClient, tmp_path: Path
) -> None:
    cache, s = tmp_path / "cache", suffix()
    ns, rf, cq = f"paced-{s}", f"rf-{s}", f"cq-{s}"
    # "next" needs 6 of the cohort's 8: 2 borrowed from the lender, so it is not released
    # early (kq.scheduler.early) and waits for the paced retry.
    apply(cluster, cache, namespace(ns), flavor(rf),
          cluster_queue(cq, rf, "cpu", 4, cohort=f"co-{s}"),
          cluster_queue(f"lender-{s}", rf, "cpu", 4, cohort=f"co-{s}"),
          local_queue(ns, "lq", cq))  # fmt: skip
    with kq_run(cluster, tmp_path / "run", ns, extra_config=GATE):
        apply(cluster, cache, workload(ns, "holder", "lq", {"cpu": 4}))
        await eventually(lambda: admitted(client, ns, "holder"), "holder admitted")
        apply(cluster, cache, workload(ns, "next", "lq", {"cpu": 6}))
        await workload_until(
            client, ns, "next", "next tried and parked",
            lambda obj: (c := condition(obj, "QuotaReserved")) is not None
            and c["status"] == "False",
        )  # fmt: skip
        await finish(client, ns, "holder")
        released = time.monotonic()
        await asyncio.sleep(2)
        # Without the gate "next" is retried a second after the release.
        assert condition(await get_workload(client, ns, "next"), "Admitted") is None
        await eventually(lambda: admitted(client, ns, "next"), "next admitted")
        assert time.monotonic() - released >= 9.5
