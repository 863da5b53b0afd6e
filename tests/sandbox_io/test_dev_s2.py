"""S2 on `kq dev --profile s2 --speed 20`: a slice node fails under the guide's training JobSet.

The guide's "Hotswap" manifests (examples/s2/hotswap.yaml: PriorityClasses and JobSet
high-jax-trillium, no Kueue) are applied with the real kubectl. Their containers declare no run
time, so the profile's hour-long default keeps them training. `kq dev node fail` then takes one
node of a slice away: its pod is marked not ready at once, evicted by the taint manager once its
default 300 s toleration runs out (15 s of wall time), its Job fails (backoffLimit 0) and the
JobSet restarts. Nothing re-places the JobSet yet but the simulated kube-scheduler, which keeps
the restarted slice on its pool's healthy nodes and leaves one pod waiting until the node is
recovered; at no time is a pod bound to the failed node.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kq.sandbox.cluster.clock import parse_rfc3339
from tests.harness import REPO
from tests.sandbox_io.devproc import Dev, running_dev, until

SPEED = 20
TOLERATION_S = 300
POOL = "cloud.google.com/gke-nodepool"
JOB_NAME = "batch.kubernetes.io/job-name"
ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
JOBSET = "high-jax-trillium"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    work = tmp_path_factory.mktemp("kq-dev-s2")
    with running_dev(work, "--fresh", profile="s2", speed=SPEED) as handle:
        yield handle


def _running_pods(dev: Dev, ns: str, attempt: str) -> list[dict[str, Any]]:
    return [p for p in dev.items("pods", ns)
            if p["metadata"]["labels"].get(ATTEMPT) == attempt
            and p["status"].get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]  # fmt: skip


def _slices(dev: Dev, ns: str, attempt: str) -> dict[str, set[str]] | None:
    """Child Job → pools of its running pods, once both Jobs run all four of their pods."""
    pools = {n["metadata"]["name"]: n["metadata"]["labels"][POOL]
             for n in dev.get("nodes")["items"]}  # fmt: skip
    pods = _running_pods(dev, ns, attempt)
    out: dict[str, set[str]] = {}
    for p in pods:
        out.setdefault(p["metadata"]["labels"][JOB_NAME], set()).add(pools[p["spec"]["nodeName"]])
    return out if len(pods) == 8 and len(out) == 2 else None


def _event(dev: Dev, ns: str, reason: str, name: str) -> dict[str, Any] | None:
    events = dev.items("events", ns)
    return next(
        (e for e in events if e["reason"] == reason and e["involvedObject"]["name"] == name), None
    )


def _no_execute(dev: Dev, node: str) -> dict[str, Any] | None:
    taints = dev.get("node", node)["spec"].get("taints") or []
    return next((t for t in taints if t["effect"] == "NoExecute"), None)


def _pod_ready(dev: Dev, ns: str, name: str) -> str:
    pod = dev.get("pod", name, "-n", ns)
    status: str = next(c["status"] for c in pod["status"]["conditions"] if c["type"] == "Ready")
    return status


def test_a_failed_node_evicts_its_pod_after_the_toleration_and_the_jobset_restarts(
    dev: Dev,
) -> None:
    ns = f"s2-{uuid.uuid4().hex[:6]}"
    dev.kubectl("create", "namespace", ns)
    dev.kubectl("apply", "-n", ns, "-f", str(REPO / "examples/s2/hotswap.yaml"))
    slices = until(lambda: _slices(dev, ns, "0"), what="both slices of the JobSet running")
    assert all(len(p) == 1 for p in slices.values()), slices
    victim = next(p for p in _running_pods(dev, ns, "0")
                  if p["metadata"]["labels"][JOB_NAME] == f"{JOBSET}-slice-0")  # fmt: skip
    pod, node = victim["metadata"]["name"], victim["spec"]["nodeName"]

    failed_at = time.monotonic()
    assert dev.kq("node", "fail", node) == f"failed: {node}\n"
    try:
        taint = until(lambda: _no_execute(dev, node), what="the NoExecute taint")
        assert taint["key"] == "node.kubernetes.io/unreachable"
        until(lambda: _pod_ready(dev, ns, pod) == "False", what="the pod marked not ready")
        assert time.monotonic() - failed_at < TOLERATION_S / SPEED  # still tolerated

        eviction = until(lambda: _event(dev, ns, "TaintManagerEviction", pod), timeout=60,
                         what="the taint manager's eviction")  # fmt: skip
        waited = parse_rfc3339(eviction["firstTimestamp"]) - parse_rfc3339(taint["timeAdded"])
        waited_s = waited.total_seconds()
        assert TOLERATION_S / SPEED - 1 <= waited_s <= TOLERATION_S / SPEED + 5, waited_s
        until(lambda: _event(dev, ns, "BackoffLimitExceeded", f"{JOBSET}-slice-0"),
              what="the child Job failing")  # fmt: skip
        until(lambda: dev.get("jobset", JOBSET, "-n", ns)["status"].get("restarts") == 1,
              what="the JobSet restart")  # fmt: skip
        restart = _event(dev, ns, "RestartJobSetFailurePolicyAction", JOBSET)
        assert restart is not None
        assert f"(first failed job: {JOBSET}-slice-0)" in restart["message"]

        # The recreated slice-0 goes back to its pool's three healthy nodes (the exclusive
        # placement's affinity pins it there) and one pod waits: never on the failed node.
        waiting = until(lambda: _waiting(dev, ns), what="the restarted JobSet placed")
        assert "untolerated taint {node.kubernetes.io/unreachable: }" in waiting
        assert node not in {p["spec"].get("nodeName") for p in dev.items("pods", ns)}
        assert {j["metadata"]["labels"][ATTEMPT] for j in dev.items("jobs", ns)} == {"1"}
    finally:
        assert dev.kq("node", "recover", node) == f"recovered: {node}\n"
    until(lambda: _no_execute(dev, node) is None, what="the taints gone")
    ready = dev.get("node", node)["status"]["conditions"]
    assert {c["type"]: c["status"] for c in ready}["Ready"] == "True"
    # Recovered, the node takes the waiting pod: the restarted JobSet runs whole again.
    until(lambda: _slices(dev, ns, "1"), what="the restarted JobSet running")


def _waiting(dev: Dev, ns: str) -> str | None:
    """The scheduler's message for the one pod of attempt 1 left pending, once 7 others run."""
    pods = [p for p in dev.items("pods", ns) if p["metadata"]["labels"].get(ATTEMPT) == "1"]
    pending = [p for p in pods if not p["spec"].get("nodeName")]
    if len(_running_pods(dev, ns, "1")) != 7 or len(pending) != 1:
        return None
    scheduled = [c for c in pending[0]["status"].get("conditions") or ()
                 if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"]  # fmt: skip
    return str(scheduled[0]["message"]) if scheduled else None
