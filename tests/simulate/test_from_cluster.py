"""``kq simulate --from-cluster --trace-from-cluster`` against a live ``kq dev`` (S4's queues),
through a proxy that counts every request: the capture only reads."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import uuid
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


def _job(namespace: str, name: str, cpu: int, seconds: int, limit: int | None = None) -> Obj:
    container = {
        "name": "work",
        "image": "busybox",
        "command": ["sleep", str(seconds)],
        "resources": {"requests": {"cpu": str(cpu), "memory": "1Gi"}},
    }
    pod = {"containers": [container], "restartPolicy": "Never"}
    labels = {"kueue.x-k8s.io/queue-name": namespace}
    if limit is not None:
        labels["kueue.x-k8s.io/max-exec-time-seconds"] = str(limit)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"suspend": True, "template": {"spec": pod}}}  # fmt: skip


def _budget() -> Obj:
    """Team B's LocalQueue may use 0.1 core-hours an hour (cluster-scoped: a name of its own on
    the shared real API server): done-b, 2 cores for up to 600 s, needs 0.33."""
    return {"apiVersion": "kq.dev/v1alpha1", "kind": "Budget",
            "metadata": {"name": f"capture-{uuid.uuid4().hex[:8]}"},
            "spec": {"target": {"kind": "LocalQueue", "namespace": "team-b", "name": "team-b"},
                     "window": {"duration": "1h"}, "resourceHours": {"cpu": "0.1"}}}  # fmt: skip


def _count(pattern: str, text: str) -> int:
    """The figure ``pattern``'s group finds in ``text``."""
    found = re.search(pattern, text)
    assert found is not None, text
    return int(found[1])


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
            _job("team-b", "done-b", 2, 60, limit=600),
            _job("team-a", "still-running", 1, 36000),
            _job("team-b", "too-big", 40, 60),  # more than team B may ever use
        )
        want = {"done-a": "Finished", "done-b": "Finished", "still-running": "Admitted",
                "too-big": "Pending"}  # fmt: skip
        wait_until(lambda: _state(kubectl) == want, f"jobs to reach {want}", within=60)
        # Made once done-b ran: the live run is as before; the simulation must hold done-b.
        budget = _budget()
        kubectl.apply(budget)
        out = tmp_path / "out"

        async def capture() -> tuple[Any, int, str, str]:
            async with counting_proxy(kubeconfig, tmp_path) as (proxy, proxied):
                code, stdout, stderr = await _simulate(proxied, out)
                return proxy, code, stdout, stderr

        try:
            proxy, code, stdout, stderr = asyncio.run(capture())
        finally:
            kubectl("delete", "budget", budget["metadata"]["name"], "--wait=false")
    assert code == 0, stderr
    assert set(proxy.methods) == {"GET"}, proxy.methods
    assert proxy.methods["GET"] >= 10  # every queueing kind, then the Workloads
    setup = list(yaml.safe_load_all((out / "cluster-setup.yaml").read_text()))
    names = {(o["kind"], o["metadata"]["name"]) for o in setup}
    assert {("ClusterQueue", "team-a-cq"), ("ClusterQueue", "team-b-cq"),
            ("LocalQueue", "team-a"), ("ResourceFlavor", "spot")} <= names  # fmt: skip
    assert all("status" not in o and "resourceVersion" not in o["metadata"] for o in setup)
    captured = [o for o in setup if o["metadata"]["name"] == budget["metadata"]["name"]]
    assert len(captured) == 1, captured  # status was already checked away above
    spec = captured[0]["spec"]  # as written, with the schema's defaults
    assert {k: spec[k] for k in budget["spec"]} == {**budget["spec"], "window": spec["window"]}
    assert spec["window"]["duration"] == "1h"
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
    assert by_job["done-b"]["maxExecutionSeconds"] == 600
    assert "maxExecutionSeconds" not in by_job["done-a"]
    # On the shared real server others' Workloads are counted too: there, at least ours.
    unknown = _count(r"(\d+) \(not admitted: run time unknown\)", stdout)
    running = _count(r"\((\d+) still running: their run time so far\)", stdout)
    if cluster.backend == "embedded":
        assert (unknown, running) == (1, 1)
    else:
        assert min(unknown, running) >= 1
    figures = json.loads((out / "figures.json").read_text())
    admitted = {w["workload"].split("/")[1].rsplit("-", 1)[0].removeprefix("job-")
                for w in figures["workloads"]
                if w["firstAdmission"] is not None
                and w["workload"].split("/")[0] in S4_NAMESPACES}  # fmt: skip
    assert admitted == {"done-a", "still-running"}  # the captured Budget holds done-b
