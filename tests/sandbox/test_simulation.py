"""End to end over the pure controllers: S1's JobSets on the s1 profile, and a pool failure."""

from __future__ import annotations

from collections import defaultdict

import pytest

from kq.sandbox.cluster.actions import Patch, Ref
from kq.sandbox.cluster.clock import ManualClock, parse_rfc3339
from kq.sandbox.cluster.job_controller import reconcile_job
from kq.sandbox.cluster.jobset_controller import reconcile_jobset
from kq.sandbox.cluster.kubelet import reconcile_pods
from kq.sandbox.cluster.node_lifecycle import (
    fail_node,
    pool_nodes,
    reconcile_nodes,
    recover_node,
)
from kq.sandbox.cluster.nodes import POOL_LABEL, node_objects
from kq.sandbox.cluster.podinfo import condition, labels_of
from kq.sandbox.cluster.profiles import load_profile
from kq.sandbox.cluster.scheduling import schedule
from tests.harness import present
from tests.sandbox.manifests import s1_jobset, s2_jobset
from tests.sandbox.world import World


@pytest.fixture
def world() -> World:
    w = World(ManualClock())
    for node in node_objects(load_profile("s1"), w.clock.now()):
        w.add(node)
    return w


def _pools_by_job(w: World) -> dict[str, set[str]]:
    """Child Job name → node pools its running pods sit on."""
    out: dict[str, set[str]] = defaultdict(set)
    for pod in w.of_kind("Pod"):
        node = pod["spec"].get("nodeName")
        if node and pod["status"].get("phase") == "Running":
            pool = labels_of(w.get("Node", node))[POOL_LABEL]
            out[labels_of(pod)["batch.kubernetes.io/job-name"]].add(pool)
    return out


def _done(w: World, name: str) -> bool:
    js = w.find("JobSet", name)
    return js is not None and (js.get("status") or {}).get("terminalState") == "Completed"


def _assert_exclusive(pools: dict[str, set[str]]) -> None:
    assert all(len(p) == 1 for p in pools.values()), pools
    used = [next(iter(p)) for p in pools.values()]
    assert len(used) == len(set(used)), f"two Jobs share a pool: {pools}"


def test_s1_three_slices_then_one_and_two(world: World) -> None:
    world.add(s1_jobset("multislice-3slice", 3))
    world.settle()
    running = [p for p in world.of_kind("Pod") if p["status"].get("phase") == "Running"]
    assert len(running) == 6
    pools = _pools_by_job(world)
    assert set(pools) == {f"multislice-3slice-slice-{i}" for i in range(3)}
    _assert_exclusive(pools)

    world.run(lambda w: _done(w, "multislice-3slice"))
    job = world.get("Job", "multislice-3slice-slice-0")
    assert present(condition(job, "Complete"))["status"] == "True"
    assert job["status"]["succeeded"] == 2
    # The trailing `sleep 60` is the run time: the Job took 60 s of sandbox time.
    took = parse_rfc3339(job["status"]["completionTime"]) - parse_rfc3339(
        job["status"]["startTime"]
    )
    assert took.total_seconds() == 60

    # Admitted together, as Kueue would after the 3-slice one finishes: both run side by side.
    world.add(s1_jobset("multislice-1slice", 1))
    world.add(s1_jobset("multislice-2slice", 2))
    world.settle()
    pools = _pools_by_job(world)
    assert set(pools) == {
        "multislice-1slice-slice-0",
        "multislice-2slice-slice-0",
        "multislice-2slice-slice-1",
    }
    _assert_exclusive(pools)
    world.run(lambda w: _done(w, "multislice-1slice") and _done(w, "multislice-2slice"))
    reasons = [e.reason for e in world.events if e.regarding.name == "multislice-2slice"]
    assert reasons[-1] == "AllJobsCompleted"
    assert world.round() == 0  # quiescent and idempotent


def test_pool_failure_restarts_on_healthy_pools(world: World) -> None:
    world.add(s1_jobset("multislice-2slice", 2))
    world.settle()
    pools = _pools_by_job(world)
    failed_pool = sorted(pools["multislice-2slice-slice-0"])[0]
    world.clock.advance(10)
    failed_at = world.clock.now()
    nodes = pool_nodes(world.of_kind("Node"), failed_pool)
    world.apply(fail_node(n) for n in nodes)
    # slice-1 completes after its 60 s; slice-0's pods sit on a dead kubelet until the taint
    # manager evicts them 300 s after the taint, which fails slice-0 and restarts the JobSet.
    world.run(lambda w: _restarts(w, "multislice-2slice") == 1)
    assert (world.clock.now() - failed_at).total_seconds() == 300
    world.run(lambda w: len(_pools_by_job(w)) == 2)

    js = world.get("JobSet", "multislice-2slice")
    assert js["status"]["restartsCountTowardsMax"] == 1
    pools = _pools_by_job(world)
    assert set(pools) == {"multislice-2slice-slice-0", "multislice-2slice-slice-1"}
    _assert_exclusive(pools)
    assert failed_pool not in {next(iter(p)) for p in pools.values()}
    for job in world.of_kind("Job"):
        assert labels_of(job)["jobset.sigs.k8s.io/restart-attempt"] == "1"
    reasons = {e.reason for e in world.events}
    assert {"NodeNotReady", "TaintManagerEviction", "BackoffLimitExceeded",
            "RestartJobSetFailurePolicyAction", "DefaultFailurePolicy"} <= reasons  # fmt: skip

    world.apply(recover_node(n) for n in pool_nodes(world.of_kind("Node"), failed_pool))
    world.run(lambda w: _done(w, "multislice-2slice"))
    assert world.get("JobSet", "multislice-2slice")["status"]["restarts"] == 1


def _restarts(w: World, name: str) -> int:
    return int((w.get("JobSet", name).get("status") or {}).get("restarts") or 0)


def test_restarts_exhausted_fail_the_jobset(world: World) -> None:
    js = s1_jobset("multislice-1slice", 1)
    js["spec"]["failurePolicy"]["maxRestarts"] = 1
    tmpl = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    tmpl["metadata"] = {"annotations": {"kq.dev/exit-code": "3"}}
    world.add(js)
    world.run(lambda w: bool((w.get("JobSet", "multislice-1slice").get("status") or {})
                             .get("terminalState")))  # fmt: skip
    status = world.get("JobSet", "multislice-1slice")["status"]
    assert status["terminalState"] == "Failed"
    assert status["restarts"] == 1
    assert present(condition(world.get("JobSet", "multislice-1slice"), "Failed"))["reason"] == (
        "ReachedMaxRestarts"
    )


def test_s2_hot_swap_at_pod_level() -> None:
    """A failed slice restarts `high` on healthy slices only, once `low` makes room."""
    profile = load_profile("s2")
    w = World(ManualClock(), profile)  # its defaultRunSeconds keeps both training for an hour
    for node in node_objects(profile, w.clock.now()):
        w.add(node)
    w.add(s2_jobset("low"))
    w.add(s2_jobset("high"))
    w.settle()
    pools = _pools_by_job(w)
    assert len(pools) == 4
    _assert_exclusive(pools)

    w.clock.advance(5)
    failed_pool = next(iter(pools["high-slice-0"]))
    w.apply(fail_node(n) for n in pool_nodes(w.of_kind("Node"), failed_pool))
    w.run(lambda w: _restarts(w, "high") == 1 and not _old_jobs(w, "high"))
    pending = [p for p in w.of_kind("Pod") if not p["spec"].get("nodeName")]
    assert len(pending) == 4  # one child Job waits: the only free healthy slice is taken
    message = present(condition(pending[0], "PodScheduled"))["message"]
    assert "node(s) had untolerated taint {node.kubernetes.io/unreachable: }" in message

    # Kueue evicts `low` to recover `high`: suspending it frees its slices.
    w.apply([Patch(Ref.of(w.get("JobSet", "low")), {"spec": {"suspend": True}})])
    w.settle()
    pools = _pools_by_job(w)
    assert set(pools) == {"high-slice-0", "high-slice-1"}
    _assert_exclusive(pools)
    assert all(failed_pool not in p for p in pools.values())
    assert w.get("JobSet", "low")["status"].get("restarts") is None  # suspension is no failure

    w.apply(recover_node(n) for n in pool_nodes(w.of_kind("Node"), failed_pool))
    w.apply([Patch(Ref.of(w.get("JobSet", "low")), {"spec": {"suspend": False}})])
    w.settle()
    pools = _pools_by_job(w)
    assert len(pools) == 4
    _assert_exclusive(pools)
    w.run(lambda w: _done(w, "high") and _done(w, "low"), max_seconds=2 * 3600)


def _old_jobs(w: World, name: str) -> list[str]:
    """Child Jobs of an earlier attempt still around (BlockingRecreate waits for them)."""
    attempt = str(_restarts(w, name))
    return [str(j["metadata"]["name"]) for j in w.of_kind("Job")
            if labels_of(j)["jobset.sigs.k8s.io/jobset-name"] == name
            and labels_of(j)["jobset.sigs.k8s.io/restart-attempt"] != attempt]  # fmt: skip


def _all_actions(w: World) -> list[object]:
    now = w.clock.now()
    nodes, pods, jobs = w.of_kind("Node"), w.of_kind("Pod"), w.of_kind("Job")
    out: list[object] = [*reconcile_nodes(nodes, now), *schedule(pods, nodes, now),
                         *reconcile_pods(pods, nodes, now)]  # fmt: skip
    for job in jobs:
        out += reconcile_job(job, pods, now)
    for jobset in w.of_kind("JobSet"):
        out += reconcile_jobset(jobset, jobs, now)
    return out


def test_controllers_are_deterministic_and_quiet_once_settled(world: World) -> None:
    world.add(s1_jobset("multislice-3slice", 3))
    for _ in range(6):  # part-way states: the same inputs always give the same actions
        assert _all_actions(world) == _all_actions(world)
        world.round()
    world.settle()
    assert _all_actions(world) == []
    world.clock.advance(60)
    now = world.clock.now()
    assert reconcile_pods(world.of_kind("Pod"), world.of_kind("Node"), now)  # run time is up
    world.settle()
    assert _all_actions(world) == []


def test_infrastructure_failures_restart_without_spending_the_budget(world: World) -> None:
    """JobSet's documented host-maintenance pattern: Job podFailurePolicy + JobSet rule."""
    js = s1_jobset("multislice-1slice", 1)
    js["spec"]["failurePolicy"] = {"maxRestarts": 0, "rules": [
        {"action": "RestartJobSetAndIgnoreMaxRestarts", "onJobFailureReasons": ["PodFailurePolicy"]}
    ]}  # fmt: skip
    job_spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    job_spec["podFailurePolicy"] = {"rules": [
        {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}]}  # fmt: skip
    world.add(js)
    world.settle()
    pool = next(iter(_pools_by_job(world)["multislice-1slice-slice-0"]))
    # The pods never finish on a dead kubelet; evicted, they end Failed with DisruptionTarget.
    world.apply(fail_node(n) for n in pool_nodes(world.of_kind("Node"), pool))
    world.run(lambda w: _restarts(w, "multislice-1slice") == 1 and bool(_pools_by_job(w)))
    status = world.get("JobSet", "multislice-1slice")["status"]
    assert status["restarts"] == 1
    assert "restartsCountTowardsMax" not in status
    assert "terminalState" not in status
    assert pool not in next(iter(_pools_by_job(world).values()))
