from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kq.sandbox.cluster.actions import Delete, Ref
from kq.sandbox.cluster.clock import ManualClock, parse_rfc3339
from kq.sandbox.cluster.nodes import node_objects
from kq.sandbox.cluster.podinfo import condition
from kq.sandbox.cluster.profiles import load_profile
from tests.harness import present
from tests.sandbox.builders import pod
from tests.sandbox.world import World

GPU_SPEC: dict[str, Any] = {
    "nodeSelector": {"cloud.google.com/gke-nodepool": "dws-pool"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "containers": [{"name": "dummy-job", "image": "gcr.io/k8s-staging-perf-tests/sleep:v0.0.3",
                    "args": ["120s"],
                    "resources": {"requests": {"cpu": "100m", "memory": "100Mi",
                                               "nvidia.com/gpu": "1"},
                                  "limits": {"cpu": "100m", "memory": "100Mi",
                                             "nvidia.com/gpu": "1"}}}],
}  # fmt: skip


def _world() -> World:
    profile = load_profile("s3")
    w = World(ManualClock(), profile)
    for node in node_objects(profile, w.clock.now()):
        w.add(node)
    return w


def _request(w: World, name: str, klass: str, count: int = 1, **params: str) -> None:
    w.add(
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": f"ppt-{name}-main"},
            "template": {"spec": GPU_SPEC},
        }
    )
    w.add({"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
           "metadata": {"name": name},
           "spec": {"provisioningClassName": klass, "parameters": params,
                    "podSets": [{"podTemplateRef": {"name": f"ppt-{name}-main"},
                                 "count": count}]}})  # fmt: skip


def _cond(w: World, name: str, type_: str) -> tuple[str, str]:
    cond = condition(w.get("ProvisioningRequest", name), type_)
    assert cond is not None, type_
    return cond["status"], cond["reason"]


def _consumer(name: str, request: str) -> dict[str, Any]:
    p = pod(name, annotations={"autoscaling.x-k8s.io/consume-provisioning-request": request})
    p["spec"] = {**GPU_SPEC}
    del p["metadata"]["uid"], p["metadata"]["creationTimestamp"]
    return p


def _gpu_nodes(w: World) -> list[str]:
    return [n["metadata"]["name"] for n in w.of_kind("Node") if "dws-pool" in n["metadata"]["name"]]


def test_queued_provisioning_creates_booked_nodes_after_a_delay() -> None:
    w = _world()
    _request(w, "job-dws-prov-1", "queued-provisioning.gke.io", maxRunDurationSeconds="600")
    w.settle()
    assert _cond(w, "job-dws-prov-1", "Accepted") == ("True", "Accepted")
    assert _cond(w, "job-dws-prov-1", "Provisioned") == ("False", "NotProvisioned")
    assert _gpu_nodes(w) == []

    w.clock.advance(30)
    w.settle()
    assert _cond(w, "job-dws-prov-1", "Provisioned") == ("True", "CapacityIsProvisioned")
    assert _gpu_nodes(w) == ["gke-dws-pool-0"]
    node = w.get("Node", "gke-dws-pool-0")
    assert node["metadata"]["annotations"]["kq.dev/provisioning-request"] == (
        "default/job-dws-prov-1"
    )

    w.add(pod("stranger", tolerations=GPU_SPEC["tolerations"]))  # no consume annotation
    w.add(_consumer("consumer", "job-dws-prov-1"))
    w.settle()
    assert w.get("Pod", "consumer")["spec"]["nodeName"] == "gke-dws-pool-0"
    assert w.get("Pod", "stranger")["spec"]["nodeName"].startswith("gke-default-pool-")
    assert _cond(w, "job-dws-prov-1", "BookingExpired") == ("True", "CapacityBookingConsumed")

    w.clock.advance(600)
    w.settle()
    assert _cond(w, "job-dws-prov-1", "CapacityRevoked") == ("True", "MaxRunDurationExceeded")
    assert _gpu_nodes(w) == []
    assert w.find("Pod", "consumer") is None  # pod GC failed and removed it with its node


def test_unused_booking_expires_and_nodes_go_away() -> None:
    w = _world()
    _request(w, "idle", "queued-provisioning.gke.io", count=2)
    w.run(lambda w: bool(_gpu_nodes(w)))
    assert w.clock.now() == ManualClock().now() + timedelta(seconds=30)  # the provisioning delay
    assert len(_gpu_nodes(w)) == 2  # one GPU per node, two pods
    w.run(lambda w: condition(w.get("ProvisioningRequest", "idle"), "BookingExpired") is not None)
    assert w.clock.now() == ManualClock().now() + timedelta(seconds=630)
    assert _cond(w, "idle", "BookingExpired") == ("True", "CapacityReservationTimeExpired")
    assert _gpu_nodes(w) == []


def test_nodes_of_a_deleted_request_are_removed_when_idle() -> None:
    w = _world()
    _request(w, "gone", "queued-provisioning.gke.io")
    w.settle()
    w.clock.advance(30)
    w.settle()
    w.apply([Delete(Ref.of(w.get("ProvisioningRequest", "gone")))])
    w.settle()
    assert _gpu_nodes(w) == []


def test_no_fitting_pool_waits_indefinitely() -> None:
    w = _world()
    _request(w, "huge", "queued-provisioning.gke.io")
    w.get("PodTemplate", "ppt-huge-main")["template"]["spec"] = {
        **GPU_SPEC, "nodeSelector": {"cloud.google.com/gke-nodepool": "nope"}}  # fmt: skip
    w.settle()
    w.clock.advance(30)
    w.settle()
    assert _cond(w, "huge", "Provisioned") == ("False", "ResourcePoolExhausted")
    w.clock.advance(7 * 86400)
    w.settle()
    assert _cond(w, "huge", "Failed") == ("True", "Expired")


def test_an_unsupported_class_is_refused_with_the_classes_served() -> None:
    w = _world()
    _request(w, "odd", "best-effort-atomic-scale-up.autoscaling.x-k8s.io")
    w.settle()
    assert _cond(w, "odd", "Accepted") == ("False", "UnsupportedProvisioningClass")
    message = present(condition(w.get("ProvisioningRequest", "odd"), "Accepted"))["message"]
    assert "queued-provisioning.gke.io" in message
    assert "best-effort-atomic-scale-up.autoscaling.x-k8s.io" in message
    assert _gpu_nodes(w) == []


@pytest.mark.parametrize(
    ("cpu", "params", "expected"),
    [
        ("1", {}, ("Provisioned", ("True", "CapacityIsFound"))),
        ("64", {}, ("Provisioned", ("False", "CapacityIsNotFound"))),
        ("64", {"noRetry": "true"}, ("Failed", ("True", "CapacityIsNotFound"))),
    ],
)
def test_check_capacity(cpu: str, params: dict[str, str], expected: Any) -> None:
    w = _world()
    w.add(
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "ppt-c-main"},
            "template": {
                "spec": {
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                    ]
                }
            },
        }
    )
    w.add({"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
           "metadata": {"name": "c"},
           "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                    "parameters": params,
                    "podSets": [{"podTemplateRef": {"name": "ppt-c-main"},
                                 "count": 2}]}})  # fmt: skip
    w.settle()
    type_, want = expected
    assert _cond(w, "c", type_) == want
    assert _gpu_nodes(w) == []


def test_s3_job_runs_on_provisioned_capacity() -> None:
    """S3's Job, resumed with the annotations Kueue's podSetUpdates add, runs on the new node."""
    w = _world()
    _request(w, "sample-job-dws-prov-1", "queued-provisioning.gke.io",
             maxRunDurationSeconds="600")  # fmt: skip
    w.run(lambda w: bool(_gpu_nodes(w)))
    w.add({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "sample-job"},
           "spec": {"parallelism": 1, "completions": 1, "template": {
               "metadata": {"annotations": {
                   "autoscaling.x-k8s.io/consume-provisioning-request": "sample-job-dws-prov-1",
                   "autoscaling.x-k8s.io/provisioning-class-name":
                       "queued-provisioning.gke.io"}},
               "spec": {**GPU_SPEC, "restartPolicy": "Never"}}}})  # fmt: skip
    w.run(lambda w: condition(w.get("Job", "sample-job"), "Complete") is not None)
    pod = w.of_kind("Pod")[0]
    assert pod["spec"]["nodeName"] == "gke-dws-pool-0"
    job = w.get("Job", "sample-job")
    took = parse_rfc3339(job["status"]["completionTime"]) - parse_rfc3339(
        job["status"]["startTime"]
    )
    assert took == timedelta(seconds=120)  # the sleep image's "120s" argument
    assert _cond(w, "sample-job-dws-prov-1", "BookingExpired")[1] == "CapacityBookingConsumed"
