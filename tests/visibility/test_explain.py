"""``kubectl kq explain workload``: why it waits, read from the scheduler's last decision, on
both backends, through the API server's aggregation to ``kq run``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    eventually,
    flavor,
    local_queue,
    pending_with,
    suffix,
    workload,
)
from tests.harness import Cluster
from tests.visibility.fixtures import serving
from tests.visibility.test_kubectl_kq import kq, ok

pytestmark = pytest.mark.slow


async def test_a_pending_workload_says_what_it_misses_and_who_holds_it(
    cluster: Cluster, tmp_path: Path
) -> None:
    ns = f"explain-{suffix()}"
    rf, cq = f"rf-{ns}", f"cq-{ns}"
    async with serving(cluster, tmp_path, ns) as client:
        cache = tmp_path / "cache"
        apply(cluster, cache, flavor(rf), cluster_queue(cq, rf, "cpu", 2),
              local_queue(ns, "lq", cq), workload(ns, "holder", "lq", {"cpu": 2}))  # fmt: skip
        await eventually(lambda: admitted(client, ns, "holder"), "holder admitted")
        apply(cluster, cache, workload(ns, "waiting", "lq", {"cpu": 1}, priority=5))
        words = (
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in "
            f"flavor {rf}, 1 more needed"
        )
        await eventually(lambda: pending_with(client, ns, "waiting", words), "waiting tried")
        out = ok(kq(cluster, "explain", "workload", "waiting", "-n", ns))
        lines = out.splitlines()
        head = f"Workload {ns}/waiting (LocalQueue lq, priority 5) is pending"
        assert lines[0] == f"{head}: WaitingForQuota: {words}"
        assert lines[1] == f"Position 1 of 1 in ClusterQueue {cq}; first in line."
        assert f"  pod set main, flavor {rf}: needs preemption, no candidate (insufficient" in out
        assert (
            f"Missing 1 cpu in flavor {rf}: it needs 1, 0 is free (nominal 2, used 2 in {cq})."
        ) in lines
        assert f"  held in {cq} by: {ns}/holder 2 (priority 0)" in lines
        assert "(withinClusterQueue: Never, reclaimWithinCohort: Never, its priority 5)" in out
        same = kq_explain(cluster, ns, "waiting")
        assert same.splitlines()[:2] == lines[:2]  # `kq explain`, the same words
        admitted_out = ok(kq(cluster, "explain", "workload", "holder", "-n", ns))
        assert admitted_out.splitlines()[0] == (
            f"Workload {ns}/holder (LocalQueue lq, priority 0) is admitted in {cq}."
        )
        missing = kq(cluster, "explain", "workload", "nope", "-n", ns)
        assert missing.returncode == 1
        assert 'workload.visibility.kueue.x-k8s.io "nope" not found' in missing.stderr


def kq_explain(cluster: Cluster, ns: str, name: str) -> str:
    """``kq explain``, kq's own command, with the cluster's kubeconfig."""
    done = subprocess.run(
        [sys.executable, "-m", "kq", "explain", "workload", name, "-n", ns,
         "--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout
