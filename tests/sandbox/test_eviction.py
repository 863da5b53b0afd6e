"""Pods on a failed node: MarkPodsNotReady, taint-manager eviction on sandbox time, pod GC."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kq.sandbox.cluster.actions import Delete, Event, Patch
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.eviction import eviction_time, next_eviction, reconcile_evictions
from kq.sandbox.cluster.node_lifecycle import Failure, fail_node, recover_node
from kq.sandbox.cluster.nodes import node_objects
from kq.sandbox.cluster.podinfo import condition
from kq.sandbox.cluster.profiles import load_profile
from tests.harness import present
from tests.sandbox.builders import NOW, node, pod
from tests.sandbox.world import World

UNREACHABLE = "node.kubernetes.io/unreachable"


def _tainted(name: str = "n", key: str = UNREACHABLE, **extra: str) -> dict[str, Any]:
    taints = [{"key": key, "effect": "NoSchedule"},
              {"key": key, "effect": "NoExecute", "timeAdded": rfc3339(NOW), **extra}]  # fmt: skip
    n = node(name, taints=taints)
    n["status"]["conditions"][-1]["status"] = "Unknown"
    return n


def _running(name: str = "p", **spec: Any) -> dict[str, Any]:
    p = pod(name, node_name="n", phase="Running", **spec)
    p["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return p


def _toleration(seconds: int | None, key: str = UNREACHABLE) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


@pytest.mark.parametrize(
    ("tolerations", "after"),
    [
        ([], 300),  # DefaultTolerationSeconds
        ([_toleration(60)], 60),
        ([_toleration(-5)], 0),
        ([_toleration(None)], None),  # tolerates forever
        ([{"operator": "Exists"}], None),  # tolerates every taint forever: no defaults added
        ([_toleration(30, "node.kubernetes.io/not-ready")], 300),  # the other key's default
    ],
)
def test_eviction_time_follows_the_tolerations(
    tolerations: list[dict[str, Any]], after: int | None
) -> None:
    when = eviction_time(_running(tolerations=tolerations), _tainted())
    assert when == (None if after is None else NOW + timedelta(seconds=after))


def test_an_untolerated_no_execute_taint_evicts_at_once() -> None:
    n = _tainted(key="example.com/maintenance")
    (when,) = {eviction_time(_running(), n), next_eviction([_running()], [n])}
    assert when is not None
    assert when < NOW
    assert eviction_time(_running(), node("n")) is None  # no NoExecute taint at all


def test_eviction_marks_disruption_then_deletes() -> None:
    p = _running()
    before = reconcile_evictions([p], [_tainted()], NOW + timedelta(seconds=299))
    assert [type(a) for a in before] == [Patch, Event]  # only MarkPodsNotReady
    mark, note = before
    assert isinstance(mark, Patch)
    assert isinstance(note, Event)
    assert mark.patch["status"]["conditions"][0]["status"] == "False"
    assert (note.reason, note.type) == ("NodeNotReady", "Warning")

    patch, event, delete = reconcile_evictions([p], [_tainted()], NOW + timedelta(seconds=300))
    assert isinstance(patch, Patch)
    assert isinstance(event, Event)
    assert isinstance(delete, Delete)
    disruption = patch.patch["status"]["conditions"][-1]
    assert (disruption["type"], disruption["status"], disruption["reason"]) == (
        "DisruptionTarget", "True", "DeletionByTaintManager")  # fmt: skip
    assert disruption["message"] == "Taint manager: deleting due to NoExecute taint"
    assert (event.reason, event.message) == ("TaintManagerEviction",
                                             "Marking for deletion Pod default/p")  # fmt: skip
    assert delete.grace_period_seconds is None  # graceful, like an eviction

    deleting = {**p, "metadata": {**p["metadata"], "deletionTimestamp": rfc3339(NOW)}}
    assert reconcile_evictions([deleting], [_tainted()], NOW + timedelta(seconds=400)) == []


def test_pod_gc_fails_and_force_deletes_pods_of_a_deleted_node() -> None:
    patch, delete = reconcile_evictions([_running()], [], NOW)
    assert isinstance(patch, Patch)
    assert isinstance(delete, Delete)
    assert patch.patch["status"]["phase"] == "Failed"
    assert patch.patch["status"]["conditions"][-1]["reason"] == "DeletionByPodGC"
    assert delete.grace_period_seconds == 0


# -- on the simulated cluster -----------------------------------------------------------------


def _world() -> World:
    w = World()
    for n in node_objects(load_profile("s4"), w.clock.now()):
        w.add(n)
    return w


def _job(**pod_spec: Any) -> dict[str, Any]:
    """A Job with ``backoffLimit: 0`` whose one pod trains for an hour."""
    container = {"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 3600"],
                 "resources": {"requests": {"cpu": "100m"}}}  # fmt: skip
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never", "containers": [container], **pod_spec}}},
    }  # fmt: skip


def _fail_pod_node(w: World, mode: Failure = "Unreachable") -> dict[str, Any]:
    (p,) = w.of_kind("Pod")
    w.apply([fail_node(w.get("Node", p["spec"]["nodeName"]), mode)])
    return p


def _job_failed(w: World) -> bool:
    return condition(w.get("Job", "train"), "Failed") is not None


@pytest.mark.parametrize("mode", ["Unreachable", "NotReady"])
def test_a_backoff_limit_0_job_fails_once_the_default_toleration_runs_out(mode: Failure) -> None:
    w = _world()
    w.add(_job())
    w.settle()
    w.clock.advance(10)
    p = _fail_pod_node(w, mode)
    w.settle()
    held = w.get("Pod", p["metadata"]["name"])
    assert held["status"]["phase"] == "Running"
    assert present(condition(held, "Ready"))["status"] == "False"

    w.run(_job_failed)
    assert w.clock.now() == NOW + timedelta(seconds=10 + 300)
    failed = condition(w.get("Job", "train"), "Failed")
    assert failed is not None
    assert failed["reason"] == "BackoffLimitExceeded"
    assert w.get("Job", "train")["status"]["failed"] == 1
    assert w.find("Pod", p["metadata"]["name"]) is None
    reasons = [e.reason for e in w.events if e.regarding.name == p["metadata"]["name"]]
    assert reasons[-3:] == ["NodeNotReady", "TaintManagerEviction", "Killing"]


def test_a_shorter_toleration_goes_sooner_and_a_forever_one_stays() -> None:
    w = _world()
    w.add(_job(tolerations=[_toleration(30)]))
    w.settle()
    _fail_pod_node(w)
    w.run(_job_failed)
    assert w.clock.now() == NOW + timedelta(seconds=30)

    w = _world()
    w.add(_job(tolerations=[_toleration(None)]))
    w.settle()
    p = _fail_pod_node(w)
    w.clock.advance(86400)
    w.settle()
    assert w.get("Pod", p["metadata"]["name"])["status"]["phase"] == "Running"
    assert next_eviction(w.of_kind("Pod"), w.of_kind("Node")) is None


def test_recovery_before_the_toleration_runs_out_keeps_the_pod() -> None:
    w = _world()
    w.add(_job())
    w.settle()
    p = _fail_pod_node(w)
    w.clock.advance(200)
    w.settle()
    w.apply([recover_node(w.get("Node", p["spec"]["nodeName"]))])
    w.settle()
    w.clock.advance(200)
    w.settle()
    kept = w.get("Pod", p["metadata"]["name"])
    assert present(condition(kept, "Ready"))["status"] == "True"
    assert condition(kept, "DisruptionTarget") is None
    assert w.get("Job", "train")["status"]["ready"] == 1
