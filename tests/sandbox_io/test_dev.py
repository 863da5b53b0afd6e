"""`kq dev` as a user runs it: a subprocess, the real kubectl, S1's JobSets and a pool failure."""

from __future__ import annotations

import json
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.harness import REPO
from tests.sandbox_io.devproc import Dev, running_dev, until

SPEED = 60
POOL = "cloud.google.com/gke-nodepool"
JOB_NAME = "batch.kubernetes.io/job-name"
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    with running_dev(tmp_path_factory.mktemp("kq-dev"), "--fresh", speed=SPEED) as handle:
        yield handle


def _namespace(dev: Dev) -> str:
    name = f"s1-{uuid.uuid4().hex[:6]}"
    dev.kubectl("create", "namespace", name)
    return name


def _s1_jobsets(*names: str, run_seconds: int | None = None) -> str:
    """S1's JobSets as the tutorial has them, minus Kueue: no queue label, not suspended."""
    text = (REPO / "examples/s1/jobsets-multislice-standard.yaml").read_text()
    docs = [d for d in yaml.safe_load_all(text) if d and d["metadata"]["name"] in names]
    for doc in docs:
        doc["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name")
        doc["spec"]["suspend"] = False
        if run_seconds is not None:
            pod = doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
            pod.setdefault("metadata", {})["annotations"] = {"kq.dev/run-seconds": str(run_seconds)}
    return yaml.safe_dump_all(docs)


def _pools(
    dev: Dev, namespace: str, phase: str = "Running", attempt: str = "0"
) -> dict[str, set[str]]:
    """Child Job → node pools its pods of restart ``attempt`` in ``phase`` are on."""
    pools = {n["metadata"]["name"]: n["metadata"]["labels"][POOL]
             for n in json.loads(dev.kubectl("get", "nodes", "-o", "json"))["items"]}  # fmt: skip
    out: dict[str, set[str]] = {}
    for pod in dev.items("pods", namespace):
        labels = pod["metadata"]["labels"]
        if labels.get(ATTEMPT) != attempt or pod["metadata"].get("deletionTimestamp"):
            continue
        if pod["status"].get("phase") == phase and pod["spec"].get("nodeName"):
            job = pod["metadata"]["labels"][JOB_NAME]
            out.setdefault(job, set()).add(pools[pod["spec"]["nodeName"]])
    return out


def _running(dev: Dev, namespace: str, jobs: int, attempt: str = "0") -> dict[str, set[str]]:
    """Wait until ``jobs`` child Jobs of restart ``attempt`` have running pods; their pools."""

    def check() -> dict[str, set[str]] | None:
        pools = _pools(dev, namespace, attempt=attempt)
        return pools if len(pools) == jobs and all(len(p) for p in pools.values()) else None

    return until(check, what=f"{jobs} running child Jobs")


def _exclusive(pools: dict[str, set[str]]) -> None:
    assert all(len(p) == 1 for p in pools.values()), pools
    used = [next(iter(p)) for p in pools.values()]
    assert len(used) == len(set(used)), f"two child Jobs share a pool: {pools}"


def _terminal(dev: Dev, namespace: str, *names: str) -> bool:
    states = {js["metadata"]["name"]: (js.get("status") or {}).get("terminalState")
              for js in dev.items("jobsets", namespace)}  # fmt: skip
    return all(states.get(name) == "Completed" for name in names)


def test_sandbox_is_private(dev: Dev) -> None:
    # The state holds every object, Secrets included; the kubeconfig holds the admin token.
    config = yaml.safe_load(dev.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
    assert config["users"][0]["user"]["token"]
    assert stat.S_IMODE(dev.data_dir.stat().st_mode) == 0o700
    for name in ("kubeconfig", "token", "state.db", "tls.key"):
        assert stat.S_IMODE((dev.data_dir / name).stat().st_mode) == 0o600, name


def test_nodes_are_registered_and_ready(dev: Dev) -> None:
    nodes = json.loads(dev.kubectl("get", "nodes", "-o", "json"))["items"]
    tpu = [n for n in nodes if "cloud.google.com/gke-tpu-accelerator" in n["metadata"]["labels"]]
    assert len(tpu) == 6
    assert {n["metadata"]["labels"][POOL] for n in tpu} == {"nodepool1", "nodepool2", "nodepool3"}
    assert all(n["status"]["allocatable"]["google.com/tpu"] == "4" for n in tpu)
    for node in nodes:
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True", node["metadata"]["name"]
    table = dev.kubectl("get", "nodes")
    assert table.count(" Ready ") == len(nodes)


def test_s1_jobsets_run_one_child_job_per_pool(dev: Dev) -> None:
    ns = _namespace(dev)
    started = time.monotonic()
    dev.kubectl("apply", "-n", ns, "-f", "-", input=_s1_jobsets("multislice-3slice"))
    pools = _running(dev, ns, 3)
    _exclusive(pools)
    until(lambda: _terminal(dev, ns, "multislice-3slice"), what="multislice-3slice")
    three = time.monotonic() - started

    dev.kubectl("apply", "-n", ns, "-f", "-",
                input=_s1_jobsets("multislice-1slice", "multislice-2slice"))  # fmt: skip
    until(lambda: _terminal(dev, ns, "multislice-1slice", "multislice-2slice"), what="S1")
    succeeded = _pools(dev, ns, "Succeeded")
    assert set(succeeded) == {"multislice-3slice-slice-0", "multislice-3slice-slice-1",
                              "multislice-3slice-slice-2", "multislice-1slice-slice-0",
                              "multislice-2slice-slice-0", "multislice-2slice-slice-1"}  # fmt: skip
    _exclusive({k: v for k, v in succeeded.items() if k.startswith("multislice-3slice")})
    _exclusive({k: v for k, v in succeeded.items() if not k.startswith("multislice-3slice")})
    print(f"S1 at --speed {SPEED}: 3-slice JobSet {three:.1f} s, whole story "
          f"{time.monotonic() - started:.1f} s wall")  # fmt: skip

    table = dev.kubectl("get", "jobsets,jobs,pods", "-n", ns)
    assert table.count("Completed") >= 3 + 12  # JobSets' terminal state and the pods
    for job in dev.items("jobs", ns):
        assert job["status"]["succeeded"] == 2
        assert any(c["type"] == "Complete" and c["status"] == "True"
                   for c in job["status"]["conditions"])  # fmt: skip
    for jobset in dev.items("jobsets", ns):
        assert [s["succeeded"] for s in jobset["status"]["replicatedJobsStatus"]] == [
            jobset["spec"]["replicatedJobs"][0]["replicas"]
        ]


def test_pool_failure_restarts_the_jobset_on_healthy_pools(dev: Dev) -> None:
    ns = _namespace(dev)
    dev.kubectl("apply", "-n", ns, "-f", "-",
                input=_s1_jobsets("multislice-2slice", run_seconds=600))  # fmt: skip
    pools = _running(dev, ns, 2)
    failed_pool = next(iter(pools["multislice-2slice-slice-0"]))
    assert dev.kq("pool", "fail", failed_pool).startswith("failed: ")
    try:
        until(lambda: (dev.items("jobsets", ns)[0].get("status") or {}).get("restarts") == 1,
               what="a JobSet restart")  # fmt: skip
        pools = _running(dev, ns, 2, attempt="1")
        _exclusive(pools)
        assert failed_pool not in set().union(*pools.values())
        jobs = dev.items("jobs", ns)
        assert {j["metadata"]["labels"][ATTEMPT] for j in jobs} == {"1"}
        reasons = {e["reason"] for e in dev.items("events", ns)}
        assert {"TaintManagerEviction", "BackoffLimitExceeded",
                "RestartJobSetFailurePolicyAction"} <= reasons  # fmt: skip
        assert "NotReady" in dev.kubectl("get", "nodes", "-l", f"{POOL}={failed_pool}")
    finally:
        assert dev.kq("pool", "recover", failed_pool).startswith("recovered: ")
    until(lambda: _terminal(dev, ns, "multislice-2slice"), what="the restarted JobSet")
    assert dev.items("jobsets", ns)[0]["status"]["restarts"] == 1


def test_state_persists_across_restarts_unless_fresh(tmp_path: Path) -> None:
    with running_dev(tmp_path) as first:
        first.kubectl("create", "namespace", "kept")
    with running_dev(tmp_path) as second:
        assert "kept" in second.kubectl("get", "namespaces")
        assert len(json.loads(second.kubectl("get", "nodes", "-o", "json"))["items"]) == 8
    with running_dev(tmp_path, "--fresh") as fresh:
        assert "kept" not in fresh.kubectl("get", "namespaces")
