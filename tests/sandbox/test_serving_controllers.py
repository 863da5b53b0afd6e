"""The serving controllers as pure functions: edge cases the HTTP tests do not reach."""

from __future__ import annotations

from typing import Any

import pytest

from kq.sandbox.cluster.actions import Create, Delete, Event, Patch, controller_ref
from kq.sandbox.cluster.apps import merge_diff, scaled, template_hash
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.deployment_controller import HASH_LABEL, reconcile_deployment
from kq.sandbox.cluster.lws_controller import reconcile_lws
from kq.sandbox.cluster.lws_objects import default_pod
from kq.sandbox.cluster.readiness import SERVING_READY_SECONDS, delay
from kq.sandbox.cluster.replicaset_controller import reconcile_replicaset
from kq.sandbox.cluster.statefulset_controller import reconcile_statefulset
from tests.sandbox.builders import NOW

TEMPLATE = {"metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip


def _obj(kind: str, name: str, spec: dict[str, Any], **status: Any) -> dict[str, Any]:
    api = "leaderworkerset.x-k8s.io/v1" if kind == "LeaderWorkerSet" else "apps/v1"
    return {"apiVersion": api, "kind": kind,
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "generation": 1},
            "spec": spec, "status": status}  # fmt: skip


def _pod(name: str, owner: dict[str, Any], *, ready: bool = True, node: str = "n1",
         **meta: Any) -> dict[str, Any]:  # fmt: skip
    conditions = [{"type": "Ready", "status": "True" if ready else "False",
                   "lastTransitionTime": rfc3339(NOW)}]  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "ownerReferences": [controller_ref(owner)], **meta},
            "spec": {"nodeName": node},
            "status": {"phase": "Running", "conditions": conditions}}  # fmt: skip


def _events(actions: list[Any]) -> list[tuple[str, str]]:
    return [(a.reason, a.message) for a in actions if isinstance(a, Event)]


def test_bad_specs_are_reported_not_crashed_on() -> None:
    deployment = _obj("Deployment", "d", {"replicas": 1, "template": TEMPLATE,
                                          "strategy": {"type": "BlueGreen"}})  # fmt: skip
    assert _events(reconcile_deployment(deployment, [], NOW)) == [
        ("InvalidSpec", 'spec.strategy.type: Unsupported value: "BlueGreen"')
    ]
    sts = _obj("StatefulSet", "s", {"replicas": "3", "template": TEMPLATE})
    assert _events(reconcile_statefulset(sts, [], NOW)) == [
        ("InvalidSpec", "spec.replicas: must be a non-negative integer, not '3'")
    ]
    lws = _obj("LeaderWorkerSet", "l", {"leaderWorkerTemplate": {
        "workerTemplate": TEMPLATE, "restartPolicy": "Sometimes"}})  # fmt: skip
    assert _events(reconcile_lws(lws, [], [], NOW)) == [
        ("InvalidSpec", 'spec.leaderWorkerTemplate.restartPolicy: Unsupported value: "Sometimes"')
    ]
    with pytest.raises(ValueError, match="IntOrString"):
        scaled("a lot", 4, round_up=True, default=1)


def test_rolling_update_surges_then_sheds_old_pods_as_new_ones_become_available() -> None:
    spec = {"replicas": 4, "template": TEMPLATE, "selector": {"matchLabels": {"app": "x"}},
            "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}  # fmt: skip
    deployment = _obj("Deployment", "d", spec)
    old_template = {**TEMPLATE, "metadata": {"labels": {"app": "x", "v": "1", HASH_LABEL: "o"}}}
    old = _obj("ReplicaSet", "d-old", {"replicas": 4, "template": old_template},
               replicas=4, availableReplicas=4)  # fmt: skip
    old["metadata"]["ownerReferences"] = [controller_ref(deployment)]
    actions = reconcile_deployment(deployment, [old], NOW)
    (created,) = [a.obj for a in actions if isinstance(a, Create)]
    assert created["metadata"]["name"] == f"d-{template_hash(TEMPLATE)}"
    assert created["spec"]["replicas"] == 1  # one surge pod, no old pod may go yet
    assert not [a for a in actions if isinstance(a, Patch) and a.ref.name == "d-old"]
    created.update(status={"replicas": 1, "availableReplicas": 1})
    created["metadata"]["uid"] = "uid-new"
    actions = reconcile_deployment(deployment, [old, created], NOW)
    scales = {a.ref.name: a.patch["spec"]["replicas"] for a in actions
              if isinstance(a, Patch) and "spec" in a.patch}  # fmt: skip
    assert scales == {"d-old": 3}  # the new pod is available: one old pod goes


def test_recreate_starts_the_new_pods_once_the_old_are_gone() -> None:
    spec = {"replicas": 2, "template": TEMPLATE, "strategy": {"type": "Recreate"}}
    deployment = _obj("Deployment", "d", spec)
    old = _obj("ReplicaSet", "d-old", {"replicas": 2, "template": {"metadata": {}}}, replicas=2)
    old["metadata"]["ownerReferences"] = [controller_ref(deployment)]
    actions = reconcile_deployment(deployment, [old], NOW)
    (created,) = [a.obj for a in actions if isinstance(a, Create)]
    assert created["spec"]["replicas"] == 0
    assert ("ScalingReplicaSet", "Scaled down replica set d-old from 2 to 0") in _events(actions)
    old["spec"]["replicas"], old["status"]["replicas"] = 0, 0
    actions = reconcile_deployment(deployment, [old, created], NOW)
    assert ("ScalingReplicaSet", f"Scaled up replica set {created['metadata']['name']} from 0 "
            "to 2") in _events(actions)  # fmt: skip


def test_replicaset_scales_down_unscheduled_and_unready_pods_first() -> None:
    rs = _obj("ReplicaSet", "r", {"replicas": 1, "template": TEMPLATE})
    pods = [_pod("r-a", rs), _pod("r-b", rs, ready=False), _pod("r-c", rs, node="")]
    deleted = [a.ref.name for a in reconcile_replicaset(rs, pods, NOW) if isinstance(a, Delete)]
    assert deleted == ["r-c", "r-b"]


def test_ordered_ready_scale_down_goes_one_pod_at_a_time_from_the_top() -> None:
    sts = _obj("StatefulSet", "s", {"replicas": 1, "template": TEMPLATE})
    pods = [_pod(f"s-{i}", sts) for i in range(3)]
    deleted = [a.ref.name for a in reconcile_statefulset(sts, pods, NOW) if isinstance(a, Delete)]
    assert deleted == ["s-2"]
    pods[2]["metadata"]["deletionTimestamp"] = rfc3339(NOW)
    assert not [a for a in reconcile_statefulset(sts, pods, NOW) if isinstance(a, Delete)]
    sts["spec"]["podManagementPolicy"] = "Parallel"
    deleted = [a.ref.name for a in reconcile_statefulset(sts, pods[:2], NOW)
               if isinstance(a, Delete)]  # fmt: skip
    assert deleted == ["s-1"]


def test_a_finished_statefulset_pod_is_deleted_to_come_back_under_its_name() -> None:
    sts = _obj("StatefulSet", "s", {"replicas": 1, "template": TEMPLATE})
    done = _pod("s-0", sts)
    done["status"]["phase"] = "Failed"
    actions = reconcile_statefulset(sts, [done], NOW)
    assert [a.ref.name for a in actions if isinstance(a, Delete)] == ["s-0"]
    assert not [a for a in actions if isinstance(a, Create)]


def test_leader_ready_startup_waits_for_the_leader() -> None:
    lws = _obj("LeaderWorkerSet", "l", {"replicas": 1, "startupPolicy": "LeaderReady",
               "leaderWorkerTemplate": {"size": 3, "workerTemplate": TEMPLATE}})  # fmt: skip
    leader_set = _obj("StatefulSet", "l", {})
    leader = _pod("l-0", leader_set, ready=False)
    leader["metadata"]["labels"] = {"leaderworkerset.sigs.k8s.io/name": "l",
                                    "leaderworkerset.sigs.k8s.io/worker-index": "0"}  # fmt: skip
    created = [a.obj["metadata"]["name"] for a in reconcile_lws(lws, [], [leader], NOW)
               if isinstance(a, Create) and a.obj["kind"] == "StatefulSet"]  # fmt: skip
    assert created == ["l"]  # the leader StatefulSet only
    leader["status"]["conditions"][0]["status"] = "True"
    created = [a.obj["metadata"]["name"] for a in reconcile_lws(lws, [], [leader], NOW)
               if isinstance(a, Create) and a.obj["kind"] == "StatefulSet"]  # fmt: skip
    assert created == ["l", "l-0"]


def test_lws_webhook_defaults_and_readiness_rules() -> None:
    pod: dict[str, Any] = {"metadata": {"name": "l-3-2", "namespace": "ns",
                        "labels": {"leaderworkerset.sigs.k8s.io/name": "l",
                                   "leaderworkerset.sigs.k8s.io/group-index": "3"},
                        "annotations": {"leaderworkerset.sigs.k8s.io/size": "4"}},
           "spec": {"subdomain": "l", "containers": [{"name": "c"}]}}  # fmt: skip
    default_pod(pod)
    assert pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "2"
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env == {"LWS_LEADER_ADDRESS": "l-3.l.ns", "LWS_GROUP_SIZE": "4", "LWS_WORKER_INDEX": "2"}
    sts = _obj("StatefulSet", "s", {})
    assert delay(_pod("s-0", sts)) == SERVING_READY_SECONDS
    probed = _pod("s-0", sts)
    probed["spec"]["containers"] = [{"name": "c", "readinessProbe": {"initialDelaySeconds": 7}}]
    assert delay(probed) == 7
    batch = _pod(
        "j-0", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "uid": "u"}}
    )
    assert delay(batch) == 0
    assert delay(_pod("j-1", sts, annotations={"kq.dev/ready-seconds": "9"})) == 9


def test_merge_diff_removes_dropped_keys() -> None:
    assert merge_diff({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": 2}, "e": [1]}) == {
        "a": None, "b": {"d": None}, "e": [1]}  # fmt: skip


def test_a_rollback_renumbers_the_old_replicaset() -> None:
    deployment = _obj("Deployment", "d", {"replicas": 1, "template": TEMPLATE})
    sets = []
    key = "deployment.kubernetes.io/revision"
    for name, revision, template in (("d-a", "1", TEMPLATE), ("d-b", "2", {"metadata": {}})):
        rs = _obj("ReplicaSet", name, {"replicas": 0, "template": template})
        rs["metadata"]["ownerReferences"] = [controller_ref(deployment)]
        rs["metadata"]["annotations"] = {key: revision}
        sets.append(rs)
    patches = [a for a in reconcile_deployment(deployment, sets, NOW) if isinstance(a, Patch)]
    notes = [(a.ref.name, a.patch["metadata"]["annotations"][key]) for a in patches
             if key in a.patch.get("metadata", {}).get("annotations", {})]  # fmt: skip
    assert notes == [("d", "3"), ("d-a", "3")]
