"""A second ``kq run`` replica that does not lead: as upstream's followers, it serves the
visibility API from its own informers (the same positions as the leader's), while explain,
which reads the leader's last decisions, answers 503 ServiceUnavailable. Both replicas run
against the test's API server, which forwards the group to the follower's port."""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.sandbox.visibility import register_visibility
from kq.visibility.summary import GROUP
from tests.controllers.helpers import admitted, apply, eventually, namespace, suffix, workload
from tests.harness import Cluster
from tests.kqrun import free_port, kq_run
from tests.visibility.fixtures import pending_in, positions, visibility_config
from tests.visibility.test_kubectl_kq import kq
from tests.visibility.test_pending_workloads import PENDING, expected, setup, stored

pytestmark = pytest.mark.slow
LEASE = "leaderElection:\n  leaseDuration: 15s\n  renewDeadline: 10s\n  retryPeriod: 1s\n"


def samples(port: int) -> list[tuple[str, Mapping[str, str], float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return [
        (s.name, s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def leads(port: int) -> bool:
    """Whether the replica on ``port`` holds the lease; False while it is not serving yet."""
    try:
        found = samples(port)
    except OSError:
        return False
    return any(n == "leader_election_master_status" and v == 1 for n, _, v in found)


async def test_a_follower_serves_positions_and_refuses_explain(
    cluster: Cluster, tmp_path: Path
) -> None:
    ns = f"follow-{suffix()}"
    cache = tmp_path / "cache"
    apply(cluster, cache, namespace(ns))
    leader_metrics, follower_metrics = free_port(), free_port()
    leader_port, follower_port = free_port(), free_port()
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        with kq_run(cluster, tmp_path / "leader", ns, visibility_config(leader_port) + LEASE,
                    metrics_port=leader_metrics):  # fmt: skip
            await eventually(lambda: _true(leads(leader_metrics)), "the first replica leads")
            with kq_run(cluster, tmp_path / "follower", ns,
                        visibility_config(follower_port) + LEASE,
                        metrics_port=follower_metrics):  # fmt: skip
                # The API server sends the visibility group to the follower only.
                await register_visibility(client, ns, follower_port)
                await _check_follower(cluster, client, ns, cache)
                assert not leads(follower_metrics)
                roles = {
                    labels["replica_role"]
                    for name, labels, _ in samples(leader_metrics)
                    if name == "kueue_admission_attempts_total"
                }
                assert roles == {"leader"}
                assert not [
                    name
                    for name, labels, _ in samples(follower_metrics)
                    if labels.get("cluster_queue", "").startswith("cq-" + ns)
                ], "a follower reports no queue series"


async def _true(value: bool) -> bool | None:
    return value or None


async def _check_follower(cluster: Cluster, client: KubeClient, ns: str, cache: Path) -> None:
    cq, objects = setup(ns, "BestEffortFIFO")
    apply(cluster, cache, *objects)
    apply(cluster, cache, workload(ns, "holder", "lq-a", {"cpu": 1}, priority=0))
    await eventually(lambda: admitted(client, ns, "holder"), "the leader admits the holder")
    for name, priority, lq in PENDING:
        apply(cluster, cache, workload(ns, name, lq, {"cpu": 1}, priority=priority))
    want = expected(await stored(client, ns, [n for n, _, _ in PENDING]))

    async def follower_positions() -> bool:
        items = await pending_in(client, "clusterqueues", cq)
        return isinstance(items, list) and positions(items) == want

    await eventually(follower_positions, f"the follower's positions {want}")
    lq_items = await pending_in(client, "localqueues", "lq-b", namespace=ns, version="v1beta2")
    assert isinstance(lq_items, list)
    assert [i["metadata"]["name"] for i in lq_items] == [n for n, _, lq in want_lq(want, "lq-b")]

    path = f"/apis/{GROUP}/v1beta1/namespaces/{ns}/workloads/low/explanation"
    with pytest.raises(ApiError) as refused:
        await client.request("GET", path)
    assert refused.value.status == 503
    assert "this replica does not lead: ask again" in str(refused.value)
    said = kq(cluster, "explain", "workload", "low", "-n", ns)
    assert said.returncode == 1
    assert "this replica does not lead" in said.stderr


def want_lq(want: list[tuple[str, int, int]], lq: str) -> list[tuple[str, int, str]]:
    lqs = dict((n, q) for n, _, q in PENDING)
    return [(n, p, lqs[n]) for n, _, p in want if lqs[n] == lq]
