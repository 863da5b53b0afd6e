from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from kq.sandbox.cluster.actions import Create, Delete, Patch, Ref
from kq.sandbox.cluster.clock import parse_rfc3339
from kq.sandbox.cluster.nodes import node_objects
from kq.sandbox.cluster.podinfo import labels_of
from kq.sandbox.cluster.profiles import load_profile
from kq.sandbox.cluster.raycluster_controller import desired_workers, reconcile_raycluster
from kq.sandbox.cluster.rayjob_controller import reconcile_rayjob
from tests.sandbox.builders import NOW
from tests.sandbox.manifests import rayjob
from tests.sandbox.world import World

POOL = "cloud.google.com/gke-nodepool"
SPOT = {"cloud.google.com/gke-spot": "true"}
SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def _world() -> World:
    w = World()
    for node in node_objects(load_profile("s4"), w.clock.now()):
        w.add(node)
    return w


def _status(w: World, name: str = "train") -> dict[str, Any]:
    return w.get("RayJob", name).get("status") or {}


def _deployment(name: str, state: str) -> Any:
    return lambda w: _status(w, name).get("jobDeploymentStatus") == state


def test_new_rayjob_gets_a_named_cluster_owned_by_it() -> None:
    job = rayjob("train")
    job["metadata"].update(uid="rj-uid", namespace="default")
    actions = reconcile_rayjob(job, [], [], NOW)
    status = actions[0]
    assert isinstance(status, Patch)
    assert status.subresource == "status"
    fields = status.patch["status"]
    assert fields["jobDeploymentStatus"] == "Initializing"
    assert re.fullmatch(r"train-[a-z0-9]{5}", fields["rayClusterName"])
    assert re.fullmatch(r"train-[a-z0-9]{5}", fields["jobId"])
    assert fields["startTime"] == "2026-01-01T00:00:00Z"
    cluster = next(a.obj for a in actions if isinstance(a, Create))
    assert cluster["kind"] == "RayCluster"
    assert cluster["metadata"]["name"] == fields["rayClusterName"]
    assert cluster["metadata"]["ownerReferences"][0]["uid"] == "rj-uid"
    assert cluster["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayJob"
    assert cluster["spec"] == job["spec"]["rayClusterSpec"]


@pytest.mark.parametrize(
    ("group", "want"),
    [
        ({"replicas": 2, "minReplicas": 1, "maxReplicas": 5}, 2),
        ({"replicas": 9, "minReplicas": 1, "maxReplicas": 5}, 5),
        ({"replicas": 0, "minReplicas": 1, "maxReplicas": 5}, 1),
        ({"replicas": 2, "minReplicas": 0, "maxReplicas": 5, "numOfHosts": 4}, 8),
        ({"replicas": 2, "minReplicas": 0, "maxReplicas": 5, "suspend": True}, 0),
    ],
)
def test_worker_count_is_clamped_like_kuberay(group: dict[str, Any], want: int) -> None:
    assert desired_workers(group) == want


def test_cluster_pods_carry_kuberay_names_and_labels() -> None:
    cluster = {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "default", "uid": "c-uid"},
        "spec": rayjob("x")["spec"]["rayClusterSpec"],
    }  # fmt: skip
    cluster["spec"]["headGroupSpec"]["template"]["metadata"] = {"labels": {"ray.io/group": "no"}}
    pods = [a.obj for a in reconcile_raycluster(cluster, [], NOW) if isinstance(a, Create)]
    head, *workers = pods
    assert re.fullmatch(r"c-head-[a-z0-9]{5}", head["metadata"]["name"])
    assert all(re.fullmatch(r"c-small-group-worker-[a-z0-9]{5}", p["metadata"]["name"])
               for p in workers)  # fmt: skip
    assert len(workers) == 2
    assert labels_of(head)["ray.io/group"] == "headgroup"  # the template cannot override it
    assert {labels_of(head)[k] for k in ("ray.io/cluster", "ray.io/node-type")} == {"c", "head"}
    assert labels_of(workers[0])["ray.io/node-type"] == "worker"
    assert labels_of(workers[0])["ray.io/group"] == "small-group"
    assert labels_of(workers[0])["ray.io/identifier"] == "c-worker"
    # Ray nodes serve until deleted: without a declared run time they do not exit.
    assert int(head["metadata"]["annotations"]["kq.dev/run-seconds"]) > 10**8


def test_rayjob_runs_to_completion_then_its_cluster_is_deleted() -> None:
    w = _world()
    w.add(rayjob("train", sleep=90))
    w.run(_deployment("train", "Running"))
    status = _status(w)
    cluster = w.get("RayCluster", status["rayClusterName"])
    assert cluster["status"]["state"] == "ready"
    assert cluster["status"]["readyWorkerReplicas"] == 2
    assert status["rayClusterStatus"]["state"] == "ready"
    submitter = w.get("Job", "train")
    container = submitter["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == "ray-job-submitter"
    assert container["image"] == "rayproject/ray:2.9.0"  # the head's image
    assert container["args"][0].startswith("ray job submit --address http://")
    assert container["args"][0].endswith("-- python -c 'import ray; ray.init()' && sleep 90")
    assert submitter["metadata"]["ownerReferences"][0]["kind"] == "RayJob"

    w.run(_deployment("train", "Complete"))
    status = _status(w)
    assert status["jobStatus"] == "SUCCEEDED"
    ran = parse_rfc3339(status["endTime"]) - parse_rfc3339(status["rayJobInfo"]["startTime"])
    assert timedelta(seconds=90) <= ran <= timedelta(seconds=91)
    w.settle()
    assert w.of_kind("RayCluster") == []  # shutdownAfterJobFinishes
    assert [labels_of(p).get("ray.io/node-type") for p in w.of_kind("Pod")] == [None]
    reasons = [e.reason for e in w.events if e.regarding.kind == "RayJob"]
    assert reasons == ["CreatedRayCluster", "CreatedRayJobSubmitter", "Complete",
                       "DeletedRayCluster"]  # fmt: skip


def test_failed_submitter_fails_the_rayjob() -> None:
    w = _world()
    job = rayjob("bad")
    job["metadata"]["annotations"] = {"kq.dev/exit-code": "1"}
    w.add(job)
    w.run(_deployment("bad", "Failed"))
    status = _status(w, "bad")
    assert (status["jobStatus"], status["reason"]) == ("FAILED", "AppFailed")
    assert w.get("Job", "bad")["status"]["failed"] == 3  # KubeRay's submitter backoffLimit 2


def _edit_templates(job: dict[str, Any]) -> dict[str, Any]:
    """What Kueue does on admission: pin every template to a flavor, then unsuspend."""
    spec = job["spec"]
    templates = [spec["rayClusterSpec"]["headGroupSpec"]["template"],
                 *(g["template"] for g in spec["rayClusterSpec"]["workerGroupSpecs"])]  # fmt: skip
    for template in templates:
        template["spec"].update(nodeSelector=SPOT, tolerations=[SPOT_TOLERATION])
    submitter = {"name": "ray-job-submitter", "image": "rayproject/ray:2.9.0"}
    spec["submitterPodTemplate"] = {"spec": {
        "restartPolicy": "Never", "nodeSelector": SPOT, "tolerations": [SPOT_TOLERATION],
        "containers": [submitter]}}  # fmt: skip
    return {"spec": {**spec, "suspend": False}}


def test_suspend_and_resume_rebuild_from_the_edited_templates() -> None:
    w = _world()
    w.add(rayjob("train", suspend=True))
    w.settle()
    assert _status(w)["jobDeploymentStatus"] == "Suspended"
    assert w.of_kind("RayCluster") == []
    assert w.of_kind("Pod") == []

    w.apply([Patch(Ref.of(w.get("RayJob", "train")), _edit_templates(w.get("RayJob", "train")))])
    w.run(lambda w: w.find("Job", "train") is not None and len(w.of_kind("Pod")) == 4)
    w.settle()
    pools = {labels_of(w.get("Node", p["spec"]["nodeName"]))[POOL] for p in w.of_kind("Pod")}
    assert pools == {"spot-pool"}
    first_cluster = _status(w)["rayClusterName"]

    w.apply([Patch(Ref.of(w.get("RayJob", "train")), {"spec": {"suspend": True}})])
    w.settle()
    status = _status(w)
    assert status["jobDeploymentStatus"] == "Suspended"
    assert not status.get("rayClusterName")
    assert not status.get("jobStatus")
    assert w.of_kind("RayCluster") == []
    assert w.of_kind("Job") == []
    assert w.of_kind("Pod") == []

    w.apply([Patch(Ref.of(w.get("RayJob", "train")), {"spec": {"suspend": False}})])
    w.run(_deployment("train", "Complete"))
    assert _status(w)["rayClusterName"] != first_cluster


def test_deleting_the_rayjob_takes_its_cluster_submitter_and_pods() -> None:
    w = _world()
    w.add(rayjob("train"))
    w.run(_deployment("train", "Running"))
    w.settle()
    assert w.of_kind("Pod")
    w.apply([Delete(Ref.of(w.get("RayJob", "train")))])
    w.run(lambda w: not w.of_kind("Pod"))
    assert w.of_kind("RayCluster") == []
    assert w.of_kind("Job") == []
