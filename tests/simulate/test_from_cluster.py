"""``kq simulate --from-cluster --trace-from-cluster`` against a live ``kq dev`` (S4's queues),
through a proxy that counts every request: the capture only reads."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kqdev import kq_dev_on
from tests.harness import REPO, Cluster, wait_until
from tests.simulate.live import Kubectl, counting_proxy

S4 = REPO / "examples" / "s4"
SPEED = 20
S4_NAMESPACES = ("team-a", "team-b")
Obj = dict[str, Any]

pytestmark = pytest.mark.slow


def _job(namespace: str, name: str, cpu: int, seconds: int) -> Obj:
    container = {
        "name": "work",
        "image": "busybox",
        "command": ["sleep", str(seconds)],
        "resources": {"requests": {"cpu": str(cpu), "memory": "1Gi"}},
    }
    pod = {"containers": [container], "restartPolicy": "Never"}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"kueue.x-k8s.io/queue-name": namespace}},
            "spec": {"suspend": True, "template": {"spec": pod}}}  # fmt: skip


def _count(pattern: str, text: str, exactly: int | None) -> bool:
    """The figure the pattern finds is the one expected, or at least 1 when others' count too."""
    found = re.search(pattern, text)
    assert found is not None, text
    return int(found[1]) == exactly if exactly is not None else int(found[1]) >= 1


def _state(kubectl: Kubectl) -> dict[str, str]:
    """Job name -> Finished / Admitted / Pending, from its Workload's conditions."""
    out = {}
    for namespace in ("team-a", "team-b"):
        for wl in kubectl.workloads(namespace):
            true = {c["type"] for c in wl.get("status", {}).get("conditions", ())
                    if c["status"] == "True"}  # fmt: skip
            job = wl["metadata"]["ownerReferences"][0]["name"]
            out[job] = next((s for s in ("Finished", "Admitted") if s in true), "Pending")
    return out


async def _simulate(kubeconfig: Path, out: Path) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kq", "simulate", "--from-cluster", "--trace-from-cluster",
        "--since", "1h", "--kubeconfig", str(kubeconfig), "--out", str(out),
        "--progress", "off", cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def test_captures_setup_and_trace_from_a_live_cluster_and_only_reads(
    cluster: Cluster, tmp_path: Path
) -> None:
    with kq_dev_on(cluster, tmp_path, "s4", SPEED) as kubeconfig:
        kubectl = Kubectl(kubeconfig, tmp_path / "kubectl-cache")
        for name in ("namespaces", "flavors", "cluster-queues", "local-queues"):
            kubectl("apply", "-f", str(S4 / f"{name}.yaml"))
        kubectl.apply(
            _job("team-a", "done-a", 1, 40),  # 2 s of wall time at speed 20
            _job("team-b", "done-b", 2, 60),
            _job("team-a", "still-running", 1, 36000),
            _job("team-b", "too-big", 40, 60),  # more than team B may ever use
        )
        want = {"done-a": "Finished", "done-b": "Finished", "still-running": "Admitted",
                "too-big": "Pending"}  # fmt: skip
        wait_until(lambda: _state(kubectl) == want, f"jobs to reach {want}", within=60)
        out = tmp_path / "out"

        async def capture() -> tuple[Any, int, str, str]:
            async with counting_proxy(kubeconfig, tmp_path) as (proxy, proxied):
                code, stdout, stderr = await _simulate(proxied, out)
                return proxy, code, stdout, stderr

        proxy, code, stdout, stderr = asyncio.run(capture())
    assert code == 0, stderr
    assert set(proxy.methods) == {"GET"}, proxy.methods
    assert proxy.methods["GET"] >= 10  # every queueing kind, then the Workloads
    setup = list(yaml.safe_load_all((out / "cluster-setup.yaml").read_text()))
    names = {(o["kind"], o["metadata"]["name"]) for o in setup}
    assert {("ClusterQueue", "team-a-cq"), ("ClusterQueue", "team-b-cq"),
            ("LocalQueue", "team-a"), ("ResourceFlavor", "spot")} <= names  # fmt: skip
    assert all("status" not in o and "resourceVersion" not in o["metadata"] for o in setup)
    # On the suite's shared real API server other tests' Workloads are captured too.
    entries = [e for e in yaml.safe_load((out / "cluster-trace.yaml").read_text())["workloads"]
               if e["namespace"] in S4_NAMESPACES]  # fmt: skip
    by_job = {e["name"].rsplit("-", 1)[0].removeprefix("job-"): e for e in entries}
    assert set(by_job) == {"done-a", "done-b", "still-running"}
    # Kueue's timestamps have whole seconds: 2 s and 3 s of wall time, give or take.
    assert 0 <= by_job["done-a"]["runtime"] <= 2 + 4
    assert 1 <= by_job["done-b"]["runtime"] <= 3 + 4
    assert by_job["done-b"]["podSets"][0]["requests"] == {"cpu": "2", "memory": "1Gi"}
    assert by_job["done-a"]["queue"] == "team-a"
    alone = cluster.backend == "embedded"
    assert _count(r"(\d+) \(not admitted: run time unknown\)", stdout, exactly=1 if alone else None)
    assert _count(r"\((\d+) still running: their run time so far\)", stdout,
                  exactly=1 if alone else None)  # fmt: skip
    figures = json.loads((out / "figures.json").read_text())
    admitted = {w["workload"] for w in figures["workloads"]
                if w["firstAdmission"] is not None
                and w["workload"].split("/")[0] in S4_NAMESPACES}  # fmt: skip
    assert len(admitted) == 3
