"""Nodes, topology Workloads and gated pods for the topology tests, through the API.

Node labels carry a per-test suffix, so each test's flavor sees only its own nodes on a backend
other tests share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.resources import NODES
from tests.controllers.helpers import workload

HOSTNAME = "kubernetes.io/hostname"


def flavor_labels(ident: str) -> dict[str, str]:
    """The test's flavor's nodeLabels; a letter first, as an all-digit suffix would read as an
    integer in YAML."""
    return {"kq-test.dev/flavor": f"f{ident}"}


def pool_label(ident: str) -> str:
    return f"kq-test.dev/pool-{ident}"


async def make_node(client: KubeClient, ident: str, pool: str, index: int, cpu: int = 4) -> str:
    """A Ready node of ``pool`` (labels: the test's flavor and pool, and its hostname)."""
    name = f"{ident}-{pool}-{index}"
    labels = {pool_label(ident): pool, **flavor_labels(ident), HOSTNAME: name}
    await client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": name, "labels": labels}})  # fmt: skip
    await set_ready(client, name, True, cpu)
    # What kube's node lifecycle controller does once the node is Ready: kube-apiserver's
    # TaintNodesByCondition gave it a not-ready NoSchedule taint at creation.
    await client.merge_patch(NODES, name, {"spec": {"taints": None}})
    return name


async def set_ready(client: KubeClient, name: str, ready: bool, cpu: int = 4) -> None:
    status = {
        "capacity": {"cpu": str(cpu), "pods": "110"},
        "allocatable": {"cpu": str(cpu), "pods": "110"},
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "Unknown",
             "reason": "KubeletReady" if ready else "NodeStatusUnknown",
             "lastHeartbeatTime": "2026-01-01T00:00:00Z",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ],
    }  # fmt: skip
    await client.merge_patch(NODES, name, {"status": status}, subresource="status")


def sliced_workload(
    ns: str, name: str, queue: str, ident: str, *, count: int, size: int, cpu: int, **spec: Any
) -> dict[str, Any]:
    """A Workload whose pods come in slices of ``size`` that each need one pool."""
    obj = workload(ns, name, queue, {"cpu": cpu}, count=count, **spec)
    obj["spec"]["podSets"][0]["topologyRequest"] = {
        "podSetSliceRequiredTopology": pool_label(ident),
        "podSetSliceSize": size,
    }
    return obj


def gated_pod(ns: str, workload_name: str, index: int, cpu: int) -> dict[str, Any]:
    """A pod as a job controller makes it from a template kq admitted with a topology."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": ns,
            "name": f"{workload_name}-{index}",
            "labels": {"kueue.x-k8s.io/tas": "true", "kueue.x-k8s.io/podset": "main"},
            "annotations": {
                "kueue.x-k8s.io/workload": workload_name,
                "batch.kubernetes.io/job-completion-index": str(index),
            },
        },
        "spec": {
            "schedulingGates": [{"name": "kueue.x-k8s.io/topology"}],
            "restartPolicy": "Never",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": str(cpu)}}}
            ],
        },
    }


def pools_of(obj: Mapping[str, Any]) -> list[str]:
    """The pool of each pod of the first pod set's topology assignment, in order."""
    psa = obj["status"]["admission"]["podSetAssignments"][0]
    return [d["values"][0] for d in psa["topologyAssignment"]["domains"] for _ in range(d["count"])]
