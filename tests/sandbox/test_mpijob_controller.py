from __future__ import annotations

from typing import Any

from kq.sandbox.cluster.actions import Create, Delete, Patch, Ref
from kq.sandbox.cluster.mpijob_controller import reconcile_mpijob
from kq.sandbox.cluster.nodes import node_objects
from kq.sandbox.cluster.podinfo import condition, labels_of
from kq.sandbox.cluster.profiles import load_profile
from tests.harness import present
from tests.sandbox.builders import NOW
from tests.sandbox.manifests import mpijob
from tests.sandbox.world import World

POOL = "cloud.google.com/gke-nodepool"
SPOT = {"cloud.google.com/gke-spot": "true"}
SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def _world() -> World:
    w = World()
    for node in node_objects(load_profile("s4"), w.clock.now()):
        w.add(node)
    return w


def _true(w: World, type_: str, name: str = "pi") -> bool:
    cond = condition(w.get("MPIJob", name), type_)
    return cond is not None and cond["status"] == "True"


def _reason(w: World, type_: str, name: str = "pi") -> str:
    return str((condition(w.get("MPIJob", name), type_) or {}).get("reason"))


def test_first_pass_creates_config_and_workers_but_no_launcher_yet() -> None:
    job = mpijob("pi", workers=2)
    job["metadata"].update(uid="mpi-uid", namespace="ns")
    actions = reconcile_mpijob(job, [], [], [], NOW)
    status = actions[0]
    assert isinstance(status, Patch)
    created = status.patch["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in created] == [
        ("Created", "True", "MPIJobCreated")
    ]
    objects = [a.obj for a in actions if isinstance(a, Create)]
    assert [o["metadata"]["name"] for o in objects] == ["pi-config", "pi-worker-0", "pi-worker-1"]
    assert objects[0]["data"]["hostfile"] == (
        "pi-worker-0.pi.ns.svc slots=1\npi-worker-1.pi.ns.svc slots=1\n"
    )
    worker = objects[2]
    assert labels_of(worker) == {
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": "pi",
        "training.kubeflow.org/job-role": "worker",
        "training.kubeflow.org/replica-index": "1",
    }
    assert worker["spec"]["hostname"] == "pi-worker-1"
    assert worker["spec"]["subdomain"] == "pi"
    assert worker["spec"]["restartPolicy"] == "Never"
    assert worker["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == "mpi-uid" for o in objects)


def test_mpijob_runs_launcher_after_workers_then_succeeds_and_cleans_workers() -> None:
    w = _world()
    w.add(mpijob("pi", workers=3))
    w.run(lambda w: _true(w, "Running"))
    launcher = w.get("Job", "pi-launcher")
    template = launcher["spec"]["template"]
    assert labels_of(template)["training.kubeflow.org/job-role"] == "launcher"
    assert template["spec"]["restartPolicy"] == "OnFailure"
    assert launcher["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
    replicas = w.get("MPIJob", "pi")["status"]["replicaStatuses"]
    assert replicas == {"Launcher": {"active": 1, "succeeded": 0, "failed": 0},
                        "Worker": {"active": 3, "succeeded": 0, "failed": 0}}  # fmt: skip

    w.run(lambda w: _true(w, "Succeeded"))
    w.settle()
    job = w.get("MPIJob", "pi")
    assert _reason(w, "Succeeded") == "MPIJobSucceeded"
    assert present(condition(job, "Running"))["status"] == "False"
    assert job["status"]["completionTime"] == launcher_completion(w)
    assert job["status"]["replicaStatuses"]["Worker"]["active"] == 0
    roles = {labels_of(p).get("training.kubeflow.org/job-role") for p in w.of_kind("Pod")}
    assert roles == {"launcher"}  # cleanPodPolicy Running deleted the workers
    reasons = [e.reason for e in w.events if e.regarding.kind == "MPIJob"]
    assert reasons == ["MPIJobCreated", "MPIJobRunning", "MPIJobSucceeded"]


def launcher_completion(w: World) -> str:
    return str(w.get("Job", "pi-launcher")["status"]["completionTime"])


def test_default_clean_pod_policy_keeps_the_workers_as_upstream() -> None:
    w = _world()
    job = mpijob("pi", workers=1)
    del job["spec"]["runPolicy"]["cleanPodPolicy"]  # mpi-operator defaults it to None
    w.add(job)
    w.run(lambda w: _true(w, "Succeeded"))
    w.settle()
    assert w.get("Pod", "pi-worker-0")["status"]["phase"] == "Running"


def test_launcher_failure_fails_the_mpijob_with_the_jobs_reason() -> None:
    w = _world()
    job = mpijob("pi", workers=1)
    job["spec"]["runPolicy"]["backoffLimit"] = 0
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]
    launcher["restartPolicy"] = "Never"
    launcher["template"]["metadata"] = {"annotations": {"kq.dev/exit-code": "3"}}
    w.add(job)
    w.run(lambda w: _true(w, "Failed"))
    assert _reason(w, "Failed") == "BackoffLimitExceeded"
    assert w.get("MPIJob", "pi")["status"]["replicaStatuses"]["Launcher"]["failed"] == 1


def _edit_templates(job: dict[str, Any]) -> dict[str, Any]:
    """What Kueue does on admission: pin both templates to a flavor, then unsuspend."""
    specs = job["spec"]["mpiReplicaSpecs"]
    for role in ("Launcher", "Worker"):
        specs[role]["template"]["spec"].update(nodeSelector=SPOT, tolerations=[SPOT_TOLERATION])
    return {"spec": {"mpiReplicaSpecs": specs, "runPolicy": {"suspend": False}}}


def test_suspend_and_resume_rebuild_from_the_edited_templates() -> None:
    w = _world()
    w.add(mpijob("pi", suspend=True))
    w.settle()
    assert _reason(w, "Suspended") == "MPIJobSuspended"
    assert _true(w, "Suspended")
    assert w.of_kind("Pod") == []
    assert w.of_kind("Job") == []
    assert not w.get("MPIJob", "pi")["status"].get("startTime")

    w.apply([Patch(Ref.of(w.get("MPIJob", "pi")), _edit_templates(w.get("MPIJob", "pi")))])
    w.run(lambda w: _true(w, "Running"))
    pools = {labels_of(w.get("Node", p["spec"]["nodeName"]))[POOL] for p in w.of_kind("Pod")}
    assert pools == {"spot-pool"}
    assert len(w.of_kind("Pod")) == 3
    assert _reason(w, "Suspended") == "MPIJobResumed"

    w.apply([Patch(Ref.of(w.get("MPIJob", "pi")), {"spec": {"runPolicy": {"suspend": True}}})])
    w.settle()
    job = w.get("MPIJob", "pi")
    assert w.of_kind("Pod") == []
    assert w.of_kind("Job") == []
    assert _reason(w, "Running") == "MPIJobSuspended"
    assert not _true(w, "Running")
    assert job["status"]["replicaStatuses"] == {"Worker": {"active": 0, "succeeded": 0,
                                                           "failed": 0}}  # fmt: skip

    w.apply([Patch(Ref.of(job), {"spec": {"runPolicy": {"suspend": False}}})])
    w.run(lambda w: _true(w, "Succeeded"))


def test_deleting_the_mpijob_takes_its_launcher_workers_and_config() -> None:
    w = _world()
    w.add(mpijob("pi"))
    w.run(lambda w: _true(w, "Running"))
    w.apply([Delete(Ref.of(w.get("MPIJob", "pi")))])
    w.run(lambda w: not w.of_kind("Pod"))
    assert w.of_kind("Job") == []
    assert w.of_kind("ConfigMap") == []
