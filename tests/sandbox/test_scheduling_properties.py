"""Property tests: the simulated scheduler never binds a pod to a node that cannot run it.

Such a node is NotReady or Unknown, cordoned (unless the pod tolerates
``node.kubernetes.io/unschedulable``, as kube-scheduler allows), or carries a NoSchedule or
NoExecute taint none of the pod's tolerations matches. The checks below restate kube's toleration
rules independently of the scheduler's own code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kq.sandbox.cluster.actions import Action, Create, Patch, Ref
from kq.sandbox.cluster.node_lifecycle import Failure, fail_node, recover_node
from kq.sandbox.cluster.nodes import node_objects
from kq.sandbox.cluster.podinfo import ready_status
from kq.sandbox.cluster.profiles import load_profile
from kq.sandbox.cluster.scheduling import place
from tests.sandbox.builders import node, pod
from tests.sandbox.manifests import s2_jobset
from tests.sandbox.world import World

TAINTS = [
    {"key": "spot", "value": "true", "effect": "NoSchedule"},
    {"key": "gpu", "effect": "NoExecute"},
    {"key": "soft", "effect": "PreferNoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
]
TOLERATIONS: list[dict[str, Any]] = [
    {"operator": "Exists"},
    {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Equal", "value": "false"},
    {"key": "gpu", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
]
CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """core/v1 ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return bool(toleration.get("key")) and toleration.get("value", "") == taint.get("value", "")


def _why_not(p: Mapping[str, Any], n: Mapping[str, Any]) -> str:
    """Why ``p`` must not be bound to ``n``; empty when it may be."""
    tolerations = (p.get("spec") or {}).get("tolerations") or []
    if ready_status(n) != "True":
        return f"Ready={ready_status(n)}"
    if (n.get("spec") or {}).get("unschedulable") and not any(
        _tolerates(t, CORDON) for t in tolerations
    ):
        return "cordoned"
    for taint in (n.get("spec") or {}).get("taints") or ():
        hard = taint["effect"] in ("NoSchedule", "NoExecute")
        if hard and not any(_tolerates(t, taint) for t in tolerations):
            return f"untolerated {taint}"
    return ""


@st.composite
def _nodes(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        taints = draw(st.lists(st.sampled_from(TAINTS), unique_by=lambda t: str(t), max_size=3))
        n = node(f"n{i}", taints=[dict(t) for t in taints],
                 allocatable={"cpu": str(draw(st.integers(1, 4))), "memory": "8Gi",
                              "pods": "110"})  # fmt: skip
        ready = draw(st.sampled_from(["True", "False", "Unknown"]))
        n["status"]["conditions"][-1]["status"] = ready
        n["spec"]["unschedulable"] = draw(st.booleans())
        out.append(n)
    return out


@st.composite
def _pods(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(1, 8))):
        tolerations = draw(st.lists(st.sampled_from(TOLERATIONS), unique_by=str, max_size=3))
        cpu = f"{draw(st.integers(1, 3)) * 500}m"
        out.append(pod(f"p{i}", requests={"cpu": cpu}, tolerations=[dict(t) for t in tolerations]))
    return out


@settings(max_examples=300, deadline=None)
@given(nodes=_nodes(), pods=_pods())
def test_no_pod_is_placed_on_a_node_that_cannot_run_it(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> None:
    placement = place(pods, nodes)
    by_name = {n["metadata"]["name"]: n for n in nodes}
    for p, name in placement.bindings:
        assert _why_not(p, by_name[name]) == "", (p["metadata"]["name"], name)
    placed = {p["metadata"]["name"] for p, _ in placement.bindings}
    for p in pods:  # and a pod left pending had nowhere to go, or lost the race for room
        if p["metadata"]["name"] not in placed and all(_why_not(p, n) for n in nodes):
            assert p["metadata"]["name"] in {q["metadata"]["name"] for q, _ in
                                             placement.unschedulable}  # fmt: skip


class _Watched(World):
    """A World that checks every Binding against the node as it is at that instant."""

    bindings = 0

    def apply(self, actions: Iterable[Action]) -> int:
        changed = 0
        for action in actions:
            if isinstance(action, Create) and action.obj["kind"] == "Binding":
                p = self.get("Pod", action.obj["metadata"]["name"])
                target = self.get("Node", action.obj["target"]["name"])
                assert _why_not(p, target) == "", (p["metadata"]["name"], target["metadata"])
                self.bindings += 1
            changed += super().apply([action])
        return changed


def _failure(mode: str) -> Failure:
    if mode == "NotReady":
        return "NotReady"
    assert mode == "Unreachable", mode
    return "Unreachable"


_STEP = st.one_of(
    st.tuples(st.just("fail"), st.integers(0, 17), st.sampled_from(["Unreachable", "NotReady"])),
    st.tuples(st.just("recover"), st.integers(0, 17), st.just("")),
    st.tuples(st.just("cordon"), st.integers(0, 17), st.sampled_from(["on", "off"])),
    st.tuples(st.just("wait"), st.sampled_from([1, 60, 299, 301, 1800]), st.just("")),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_STEP, min_size=1, max_size=12))
def test_s2_jobsets_never_land_on_a_failed_node(steps: list[tuple[str, int, str]]) -> None:
    """Nodes fail, recover and are cordoned under S2's running JobSets in any order; every
    binding the scheduler makes, including the JobSets' restarts, targets a usable node."""
    profile = load_profile("s2")
    w = _Watched(profile=profile)
    for n in node_objects(profile, w.clock.now()):
        w.add(n)
    w.add(s2_jobset("low"))
    w.add(s2_jobset("high"))
    w.settle()
    names = sorted(n["metadata"]["name"] for n in w.of_kind("Node"))
    for what, arg, mode in steps:
        if what == "wait":
            w.clock.advance(arg)
        else:
            target = w.get("Node", names[arg % len(names)])
            if what == "fail":
                w.apply([fail_node(target, _failure(mode))])
            elif what == "recover":
                w.apply([recover_node(target)])
            else:
                w.apply([Patch(Ref.of(target), {"spec": {"unschedulable": mode == "on" or None}})])
        w.settle()
    assert w.bindings >= 16  # both JobSets were placed at least once
