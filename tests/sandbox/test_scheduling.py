from __future__ import annotations

from typing import Any

from kq.sandbox.cluster.actions import Create, Event, Patch
from kq.sandbox.cluster.exclusive import with_exclusive_affinity
from kq.sandbox.cluster.scheduling import place, schedule
from tests.sandbox.builders import NOW, node, pod

TPU = {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}


def _where(pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> dict[str, str]:
    return {p["metadata"]["name"]: n for p, n in place(pods, nodes).bindings}


def _why(pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> dict[str, str]:
    return {p["metadata"]["name"]: m for p, m in place(pods, nodes).unschedulable}


def test_message_counts_one_reason_per_node_like_kube_scheduler() -> None:
    nodes = [node(f"cpu-{i}") for i in range(4)] + [
        node(f"tpu-{i}", labels=TPU, allocatable={"cpu": "8", "memory": "8Gi", "pods": "110",
                                                   "google.com/tpu": "4"})
        for i in range(2)
    ]  # fmt: skip
    bound = [pod(f"b{i}", limits={"google.com/tpu": 4}, node_name=f"tpu-{i}") for i in range(2)]
    waiting = pod("w", limits={"google.com/tpu": 4}, nodeSelector=TPU)
    assert _why([*bound, waiting], nodes)["w"] == (
        "0/6 nodes are available: 2 Insufficient google.com/tpu, 4 node(s) didn't match Pod's "
        "node affinity/selector. preemption: 0/6 nodes are available: 6 Preemption is not "
        "helpful for scheduling."
    )


def test_batch_aware_capacity() -> None:
    nodes = [node("n", allocatable={"cpu": "1", "memory": "1Gi", "pods": "110"})]
    pods = [pod(f"p{i}", requests={"cpu": "600m"}) for i in range(2)]
    assert _where(pods, nodes) == {"p0": "n"}
    assert "1 Insufficient cpu" in _why(pods, nodes)["p1"]


def test_init_containers_take_the_max_and_overhead_adds() -> None:
    nodes = [node("n", allocatable={"cpu": "1", "memory": "1Gi", "pods": "110"})]
    heavy_init = pod(
        "p",
        requests={"cpu": "100m"},
        initContainers=[{"name": "i", "resources": {"requests": {"cpu": "1200m"}}}],
    )
    assert "Insufficient cpu" in _why([heavy_init], nodes)["p"]
    overhead = pod("q", requests={"cpu": "900m"}, overhead={"cpu": "200m"})
    assert "Insufficient cpu" in _why([overhead], nodes)["q"]
    assert _where([pod("r", requests={"cpu": "900m"})], nodes) == {"r": "n"}  # fmt: skip


def test_pods_capacity() -> None:
    nodes = [node("n", allocatable={"cpu": "4", "memory": "1Gi", "pods": "1"})]
    assert "1 Too many pods" in _why([pod("a", node_name="n"), pod("b")], nodes)["b"]


def test_node_affinity_operators_and_match_fields() -> None:
    nodes = [node("a", labels={"gen": "3", "zone": "x"}), node("b", labels={"gen": "5"})]

    def affinity(*exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> Any:
        term: dict[str, Any] = {"matchExpressions": list(exprs)}
        if fields:
            term["matchFields"] = fields
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]}}}  # fmt: skip

    cases = {
        "gt": affinity({"key": "gen", "operator": "Gt", "values": ["4"]}),
        "lt": affinity({"key": "gen", "operator": "Lt", "values": ["4"]}),
        "notin": affinity({"key": "gen", "operator": "NotIn", "values": ["3"]}),
        "exists": affinity({"key": "zone", "operator": "Exists"}),
        "dne": affinity({"key": "zone", "operator": "DoesNotExist"}),
        "field": affinity(fields=[{"key": "metadata.name", "operator": "In", "values": ["b"]}]),
    }
    where = _where([pod(name, affinity=a) for name, a in cases.items()], nodes)
    assert where == {"gt": "b", "lt": "a", "notin": "b", "exists": "a", "dne": "b", "field": "b"}


def test_taints_and_tolerations() -> None:
    spot = node("spot", taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}])
    plain = pod("plain")
    equal = pod("equal", tolerations=[{"key": "spot", "value": "true", "effect": "NoSchedule"}])
    wildcard = pod("wild", tolerations=[{"operator": "Exists"}])
    assert _where([plain, equal, wildcard], [spot]) == {"equal": "spot", "wild": "spot"}
    assert "1 node(s) had untolerated taint {spot: true}" in _why([plain], [spot])["plain"]


def test_not_ready_and_cordoned_nodes_take_no_pods() -> None:
    cordoned = node("c")
    cordoned["spec"]["unschedulable"] = True
    message = _why([pod("p")], [node("down", ready=False), cordoned])["p"]
    assert "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }" in message
    assert "1 node(s) were unschedulable" in message


def test_gated_and_terminal_pods_are_not_scheduled() -> None:
    gated = pod("g", schedulingGates=[{"name": "kueue.x-k8s.io/topology"}])
    done = pod("d", phase="Succeeded")
    result = place([gated, done], [node("n")])
    assert [p["metadata"]["name"] for p in result.gated] == ["g"]
    assert not result.bindings
    actions = schedule([gated], [node("n")], NOW)
    assert isinstance(actions[0], Patch)
    cond = actions[0].patch["status"]["conditions"][-1]
    assert (cond["reason"], cond["status"]) == ("SchedulingGated", "False")


def _exclusive(name: str, job: str) -> dict[str, Any]:
    p = pod(name, limits={"google.com/tpu": 4},
            labels={"jobset.sigs.k8s.io/job-key": job},
            annotations={"alpha.jobset.sigs.k8s.io/exclusive-topology":
                         "cloud.google.com/gke-nodepool"})  # fmt: skip
    return with_exclusive_affinity(p)


def test_exclusive_topology_gives_each_job_its_own_pool() -> None:
    nodes = [
        node(f"{pool}-{i}", labels={"cloud.google.com/gke-nodepool": pool},
             allocatable={"cpu": "8", "memory": "8Gi", "pods": "110", "google.com/tpu": "8"})
        for pool in ("a", "b") for i in range(2)
    ]  # fmt: skip
    pods = [_exclusive(f"{job}-{i}", job) for job in ("j1", "j2") for i in range(2)]
    pods.append(_exclusive("j3-0", "j3"))
    where = _where(pods, nodes)
    pools = {name: where[name].split("-")[0] for name in where}
    assert pools["j1-0"] == pools["j1-1"]
    assert pools["j2-0"] == pools["j2-1"]
    assert pools["j1-0"] != pools["j2-0"]
    # Room for j3 exists on the nodes, but both pools are taken by other Jobs.
    assert "didn't satisfy existing pods anti-affinity rules" in _why(pods, nodes)["j3-0"]


def test_provisioning_request_booking() -> None:
    booked = node("booked", annotations={"kq.dev/provisioning-request": "default/req-1"})
    other_booked = node("other", annotations={"kq.dev/provisioning-request": "default/req-2"})
    consumer = pod("c", annotations={
        "cluster-autoscaler.kubernetes.io/consume-provisioning-request": "req-1"})  # fmt: skip
    stranger = pod("s")
    assert _where([consumer, stranger], [booked, other_booked]) == {"c": "booked"}
    assert (
        "2 node(s) were booked by a ProvisioningRequest"
        in _why([stranger], [booked, other_booked])["s"]
    )
    assert _where([stranger], [booked, node("free")]) == {"s": "free"}
    picky = pod("p", requests={"cpu": "64"}, annotations={
        "autoscaling.x-k8s.io/consume-provisioning-request": "req-1"})  # fmt: skip
    assert (
        "1 node(s) were not provisioned for the pod's ProvisioningRequest"
        in _why([picky], [booked, other_booked])["p"]
    )


def test_requests_without_booked_nodes_use_shared_capacity() -> None:
    """check-capacity requests book no nodes: their pods schedule on ordinary ones."""
    checker = pod("k", annotations={
        "autoscaling.x-k8s.io/consume-provisioning-request": "req-9"})  # fmt: skip
    assert _where([checker], [node("free")]) == {"k": "free"}


def test_queue_order_is_priority_then_age() -> None:
    nodes = [node("n", allocatable={"cpu": "1", "memory": "1Gi", "pods": "110"})]
    low = pod("a-low", requests={"cpu": "1"}, priority=0)
    high = pod("z-high", requests={"cpu": "1"}, priority=100)
    assert _where([low, high], nodes) == {"z-high": "n"}


def test_schedule_emits_binding_and_is_idempotent_on_failure() -> None:
    actions = schedule([pod("p")], [node("n")], NOW)
    binding = actions[0]
    assert isinstance(binding, Create)
    assert binding.obj["kind"] == "Binding"
    assert binding.obj["target"]["name"] == "n"
    assert isinstance(actions[1], Event)
    assert actions[1].reason == "Scheduled"

    stuck = pod("p", requests={"cpu": "64"})
    first = schedule([stuck], [node("n")], NOW)
    assert [type(a) for a in first] == [Patch, Event]
    assert isinstance(first[1], Event)
    assert first[1].reason == "FailedScheduling"
    assert isinstance(first[0], Patch)
    stuck["status"] = first[0].patch["status"]
    assert schedule([stuck], [node("n")], NOW) == []
