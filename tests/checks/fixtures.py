"""Workloads, configs and requests in the API's shape, for the ProvisioningRequest check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kq.admissionchecks import Resource, Store

Obj = dict[str, Any]


def pod_set(name: str, count: int, requests: Obj | None = None, limits: Obj | None = None) -> Obj:
    resources: Obj = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    container = {"name": "c", "image": "busybox", "resources": resources}
    return {"name": name, "count": count, "template": {"spec": {"containers": [container]}}}


def assignment(name: str, count: int | None, flavor: str = "flv1") -> Obj:
    out: Obj = {"name": name, "flavors": {"cpu": flavor}}
    if count is not None:
        out["count"] = count
    return out


def condition(kind: str, status: str = "True", message: str = "") -> Obj:
    return {"type": kind, "status": status, "reason": kind, "message": message}


def workload(
    pod_sets: list[Obj] | None = None,
    assignments: list[Obj] | None = None,
    *,
    checks: list[Obj] | None = None,
    conditions: list[Obj] | None = None,
    annotations: Obj | None = None,
    name: str = "wl",
    namespace: str = "ns",
) -> Obj:
    """A Workload with quota reserved for ``assignments`` (by default one per pod set)."""
    pod_sets = pod_sets or [
        pod_set("ps1", 4, {"cpu": "1"}),
        pod_set("ps2", 4, {"memory": "1M"}),
    ]
    if assignments is None:
        assignments = [
            assignment("ps1", 4, "flv1"),
            assignment("ps2", 3, "flv2"),
        ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": "wl-uid",
            "annotations": annotations or {},
        },
        "spec": {"podSets": pod_sets, "queueName": "lq"},
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": assignments},
            "conditions": [condition("QuotaReserved"), *(conditions or [])],
            "admissionChecks": checks or [{"name": "check1", "state": "Pending"}],
        },
    }


def config(name: str = "config1", **spec: Any) -> Obj:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": name},
        "spec": {"provisioningClassName": "class1", "parameters": {"p1": "v1"}, **spec},
    }


def check(name: str = "check1", config_name: str = "config1") -> Obj:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": config_name,
            },
        },
    }


def flavor(name: str, labels: Obj, tolerations: list[Obj] | None = None) -> Obj:
    spec: Obj = {"nodeLabels": labels}
    if tolerations:
        spec["tolerations"] = tolerations
    return {"metadata": {"name": name}, "spec": spec}


FLAVORS = {
    "flv1": flavor(
        "flv1",
        {"f1l1": "v1"},
        [{"key": "f1t1k", "operator": "Equal", "value": "f1t1v", "effect": "NoSchedule"}],
    ),
    "flv2": flavor("flv2", {"f2l1": "v1"}),
}


def request(
    name: str = "wl-check1-1",
    *,
    conditions: list[Obj] | None = None,
    class_name: str = "class1",
    parameters: Obj | None = None,
    pod_sets: tuple[str, ...] = ("ps1", "ps2"),
    details: Obj | None = None,
) -> Obj:
    status: Obj = {"conditions": conditions or []}
    if details is not None:
        status["provisioningClassDetails"] = details
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"{name}-uid",
            "ownerReferences": [
                {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "name": "wl"}
                | {"uid": "wl-uid", "controller": True}
            ],
        },
        "spec": {
            "provisioningClassName": class_name,
            "parameters": {"p1": "v1"} if parameters is None else parameters,
            "podSets": [
                {"podTemplateRef": {"name": f"ppt-{name}-{ps}"}, "count": 1} for ps in pod_sets
            ],
        },
        "status": status,
    }


@dataclass
class FakeContext:
    """A ``CheckContext`` whose caches are filled by hand."""

    client: Any
    stores: dict[Resource, Store] = field(default_factory=dict)
    events: list[tuple[str, str, bool]] = field(default_factory=list)
    enqueued: list[tuple[str, float]] = field(default_factory=list)

    def store(self, resource: Resource) -> Store:
        return self.stores.setdefault(resource, Store())

    def enqueue(self, workload_key: str, after: float = 0.0) -> None:
        self.enqueued.append((workload_key, after))

    def event(self, obj: Obj, reason: str, message: str, warning: bool = False) -> None:
        self.events.append((reason, message, warning))

    def add(self, resource: Resource, *objs: Obj) -> None:
        for obj in objs:
            self.store(resource).upsert(obj)
