"""Small object builders for the unit tests."""

from __future__ import annotations

from typing import Any

from kq.sandbox.cluster.clock import ManualClock
from kq.sandbox.cluster.nodes import ready_conditions

NOW = ManualClock().now()


def node(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    allocatable: dict[str, Any] | None = None,
    taints: list[dict[str, str]] | None = None,
    ready: bool = True,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    conditions = ready_conditions(NOW)
    if not ready:
        conditions[-1] = {**conditions[-1], "status": "False", "reason": "KubeletNotReady"}
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            "annotations": annotations or {},
        },
        "spec": spec,
        "status": {
            "allocatable": allocatable or {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
        },
    }


def pod(
    name: str,
    *,
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    node_name: str = "",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    phase: str = "Pending",
    **spec: Any,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    body: dict[str, Any] = {
        "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        **spec,
    }
    if node_name:
        body["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "labels": labels or {},
            "annotations": annotations or {},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": body,
        "status": {"phase": phase},
    }
