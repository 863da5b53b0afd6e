"""``kubectl kq``: the real kubectl runs the ``kubectl-kq`` plugin against a cluster where
``kq run`` admits and serves the visibility API; its tables are read by their columns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kq.runtime.resources import CLUSTER_QUEUES, WORKLOADS
from tests.controllers.helpers import admitted, apply, eventually, flavor, suffix, workload
from tests.harness import Cluster
from tests.visibility.fixtures import serving

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent  # where kubectl-kq is installed


def kq(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig),
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # fmt: skip
    return subprocess.run(["kubectl", "kq", *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)  # fmt: skip


def table(out: str) -> list[dict[str, str]]:
    """Rows of a kubectl table as column -> cell, cut at the headers' offsets (cells may be
    empty, so splitting on blanks would shift them)."""
    header, *lines = out.splitlines()
    starts = []
    position = 0
    for name in _headers(header):
        position = header.index(name, position)
        starts.append(position)
        position += len(name)
    ends = [*starts[1:], None]
    return [
        {name: line[start:end].strip() for name, start, end in zip(_headers(header), starts, ends,
                                                                   strict=True)}
        for line in lines
    ]  # fmt: skip


def _headers(header: str) -> list[str]:
    """Headers are separated by at least three spaces; some have one inside."""
    return [h.strip() for h in header.split("   ") if h.strip()]


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_kubectl_kq_on_a_small_setup(cluster: Cluster, tmp_path: Path) -> None:
    ns = f"kqctl-{suffix()}"
    rf, cq = f"rf-{ns}", f"cq-{ns}"
    async with serving(cluster, tmp_path, ns) as client:
        apply(cluster, tmp_path / "cache", flavor(rf, {"pool": ns}))
        created = ok(kq(cluster, "create", "clusterqueue", cq, "--queuing-strategy",
                        "StrictFIFO", "--namespace-selector", "", "--nominal-quota",
                        f"{rf}:cpu=1"))  # fmt: skip
        assert created == f"clusterqueue.kueue.x-k8s.io/{cq} created\n"
        stored = await client.get(CLUSTER_QUEUES, cq)
        assert stored["spec"]["resourceGroups"] == [
            {"coveredResources": ["cpu"],
             "flavors": [{"name": rf, "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}
        ]  # fmt: skip
        assert ok(kq(cluster, "create", "lq", "team", "-c", cq, "-n", ns)) == (
            "localqueue.kueue.x-k8s.io/team created\n"
        )
        refused = kq(cluster, "create", "lq", "other", "-c", f"no-{cq}", "-n", ns)
        assert refused.returncode == 1
        assert f"ClusterQueue no-{cq} not found" in refused.stderr

        apply(cluster, tmp_path / "cache", workload(ns, "holder", "team", {"cpu": 1}))
        await eventually(lambda: admitted(client, ns, "holder"), "holder admitted")
        apply(cluster, tmp_path / "cache",
              workload(ns, "second", "team", {"cpu": 1}, priority=5),
              workload(ns, "first", "team", {"cpu": 1}, priority=9))  # fmt: skip

        async def positions() -> dict[str, tuple[str, str]] | None:
            rows = table(ok(kq(cluster, "list", "workload", "-n", ns)))
            found = {r["NAME"]: (r["STATUS"], r["POSITION IN QUEUE"]) for r in rows}
            want = {"holder": ("ADMITTED", ""), "first": ("PENDING", "0"),
                    "second": ("PENDING", "1")}  # fmt: skip
            return found if found == want else None

        await eventually(positions, "workloads listed with their positions")
        [row] = [r for r in table(ok(kq(cluster, "list", "workload", "-n", ns)))
                 if r["NAME"] == "holder"]  # fmt: skip
        assert (row["LOCALQUEUE"], row["CLUSTERQUEUE"]) == ("team", cq)
        assert row["EXEC TIME"]
        assert row["AGE"]

        async def counted() -> bool:
            rows = table(ok(kq(cluster, "list", "clusterqueue")))
            mine = [r for r in rows if r["NAME"] == cq]
            return mine == [{"NAME": cq, "COHORT": "", "PENDING WORKLOADS": "2",
                             "ADMITTED WORKLOADS": "1", "ACTIVE": "true",
                             "AGE": mine[0]["AGE"]}]  # fmt: skip

        await eventually(counted, "the ClusterQueue's counts")
        [lq] = table(ok(kq(cluster, "list", "localqueue", "-n", ns)))
        assert (lq["NAME"], lq["CLUSTERQUEUE"]) == ("team", cq)
        [flavor_row] = [r for r in table(ok(kq(cluster, "list", "rf"))) if r["NAME"] == rf]
        assert flavor_row["NODE LABELS"] == f"pool={ns}"

        # Stopping the first in line takes it out of the queue; the other moves up.
        assert ok(kq(cluster, "stop", "workload", "first", "-n", ns)) == (
            "workload.kueue.x-k8s.io/first stopped\n"
        )
        assert (await client.get(WORKLOADS, "first", ns))["spec"]["active"] is False

        async def moved_up() -> bool:
            rows = table(ok(kq(cluster, "list", "workload", "-n", ns, "--status", "pending")))
            return {r["NAME"]: r["POSITION IN QUEUE"] for r in rows} == {"first": "",
                                                                         "second": "0"}  # fmt: skip

        await eventually(moved_up, "second first in line")
        ok(kq(cluster, "resume", "workload", "first", "-n", ns))
        assert (await client.get(WORKLOADS, "first", ns))["spec"]["active"] is True
        ok(kq(cluster, "stop", "clusterqueue", cq, "--keep-already-running"))
        assert (await client.get(CLUSTER_QUEUES, cq))["spec"]["stopPolicy"] == "Hold"
        assert ok(kq(cluster, "resume", "cq", cq)) == f"clusterqueue.kueue.x-k8s.io/{cq} resumed\n"
        assert (await client.get(CLUSTER_QUEUES, cq))["spec"]["stopPolicy"] == "None"

        # Pass-through to kubectl, and the user's kubeconfig choices.
        got = ok(kq(cluster, "get", "workload", "first", "-n", ns, "-o", "name"))
        assert got == "workload.kueue.x-k8s.io/first\n"
        wrong = kq(cluster, "list", "cq", "--context", "nowhere")
        assert wrong.returncode == 1
        assert "nowhere" in wrong.stderr
