"""Realistic core/v1 Node objects for a profile's pools, as GKE would register them."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from kq.sandbox.cluster.actions import Obj
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.profiles import NodePool, Profile

KUBELET_VERSION = "v1.32.4-gke.1106006"
POOL_LABEL = "cloud.google.com/gke-nodepool"
PROVISIONING_REQUEST_ANNOTATION = "kq.dev/provisioning-request"
"""Set on nodes an autoscaler created for one ProvisioningRequest, as ``<namespace>/<name>``."""


def node_name(pool: NodePool, index: int) -> str:
    return f"gke-{pool.name}-{index}"


def ready_conditions(now: datetime) -> list[Obj]:
    """The conditions a healthy kubelet reports."""
    stamp = rfc3339(now)
    quiet = [
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ]
    conditions: list[Obj] = [
        {"type": t, "status": "False", "reason": r, "message": m,
         "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}
        for t, r, m in quiet
    ]  # fmt: skip
    conditions.append(
        {"type": "Ready", "status": "True", "reason": "KubeletReady",
         "message": "kubelet is posting ready status", "lastHeartbeatTime": stamp,
         "lastTransitionTime": stamp}
    )  # fmt: skip
    return conditions


def _address(name: str) -> str:
    digest = hashlib.sha1(name.encode()).digest()
    return f"10.128.{digest[0]}.{digest[1] % 250 + 2}"


def make_node(
    pool: NodePool,
    index: int,
    *,
    region: str,
    now: datetime,
    zone: str | None = None,
    extra_labels: dict[str, str] | None = None,
) -> Obj:
    """Node ``index`` of ``pool``; autoscalers pass ``zone`` and ``extra_labels`` for new nodes."""
    name = node_name(pool, index)
    zone = zone or pool.zone
    labels: dict[str, str] = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "kubernetes.io/hostname": name,
        "node.kubernetes.io/instance-type": pool.machine_type,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        "cloud.google.com/machine-family": pool.machine_type.split("-")[0],
        POOL_LABEL: pool.name,
        **pool.labels,
        **(extra_labels or {}),
    }
    spec: dict[str, Any] = {"providerID": f"gce://kq-sandbox/{zone}/{name}"}
    if pool.taints:
        spec["taints"] = [dict(t) for t in pool.taints]
    address = _address(name)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
        "status": {
            "capacity": dict(pool.capacity),
            "allocatable": dict(pool.allocatable),
            "conditions": ready_conditions(now),
            "addresses": [
                {"type": "InternalIP", "address": address},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": hashlib.sha1(f"boot/{name}".encode()).hexdigest()[:32],
                "containerRuntimeVersion": "containerd://1.7.24",
                "kernelVersion": "6.6.72+",
                "kubeProxyVersion": KUBELET_VERSION,
                "kubeletVersion": KUBELET_VERSION,
                "machineID": hashlib.sha1(f"machine/{name}".encode()).hexdigest()[:32],
                "operatingSystem": "linux",
                "osImage": "Container-Optimized OS from Google",
                "systemUUID": hashlib.sha1(f"uuid/{name}".encode()).hexdigest()[:32],
            },
            "phase": "Running",
        },
    }


def node_objects(profile: Profile, now: datetime) -> list[Obj]:
    """The nodes a profile starts with; queued-provisioning pools start with none."""
    return [
        make_node(pool, i, region=profile.region, now=now)
        for pool in profile.pools
        if not pool.queued_provisioning
        for i in range(pool.count)
    ]
