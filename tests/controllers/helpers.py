"""Manifests and polling for the controller tests."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import CLUSTER_QUEUES, WORKLOADS
from tests import harness
from tests.harness import Cluster

T = TypeVar("T")
TIMEOUT_S = 20.0
WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"


def suffix() -> str:
    return uuid.uuid4().hex[:6]


def apply(cluster: Cluster, cache: Path, *objects: Mapping[str, Any]) -> None:
    result = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects), cache_dir=cache)
    assert result.returncode == 0, result.stderr


def kubectl_json(cluster: Cluster, cache: Path, *args: str) -> Any:
    result = cluster.kubectl(*args, "-o", "json", cache_dir=cache)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


async def eventually(probe: Callable[[], Awaitable[T | None]], what: str) -> T:
    """Poll ``probe`` until it returns something other than None/False; an API error is a miss."""
    return await harness.eventually(
        probe, what, within=TIMEOUT_S, retry=lambda exc: isinstance(exc, ApiError)
    )


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def flavor(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": dict(labels or {})},
    }


def cluster_queue(
    name: str, flavor_name: str, resource: str, quota: int | str, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": [resource],
                    "flavors": [
                        {
                            "name": flavor_name,
                            "resources": [{"name": resource, "nominalQuota": quota}],
                        }
                    ],
                }
            ],
            **spec,
        },
    }


def local_queue(ns: str, name: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"clusterQueue": cq},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def workload(
    ns: str,
    name: str,
    queue: str,
    requests: Mapping[str, str | int],
    *,
    pod_set: str = "main",
    count: int = 1,
    node_selector: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "c",
                "image": "busybox",
                "resources": {"requests": {k: str(v) for k, v in requests.items()}},
            }
        ],
    }
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"namespace": ns, "name": name},
        "spec": {
            "queueName": queue,
            "podSets": [{"name": pod_set, "count": count, "template": {"spec": pod}}],
            **spec,
        },
    }


def condition(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return None


def is_true(obj: Mapping[str, Any], type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


async def get_workload(client: KubeClient, ns: str, name: str) -> dict[str, Any]:
    return await client.get(WORKLOADS, name, ns)


async def workload_until(
    client: KubeClient, ns: str, name: str, what: str, test: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The Workload once ``test`` holds for it (polled, as ``eventually``)."""

    async def probe() -> dict[str, Any] | None:
        obj = await get_workload(client, ns, name)
        return obj if test(obj) else None

    return await eventually(probe, what)


async def admitted(client: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    obj = await get_workload(client, ns, name)
    ok = is_true(obj, "QuotaReserved") and is_true(obj, "Admitted")
    return obj if ok else None


async def pending_with(
    client: KubeClient, ns: str, name: str, message: str
) -> dict[str, Any] | None:
    obj = await get_workload(client, ns, name)
    cond = condition(obj, "QuotaReserved")
    ok = cond is not None and cond["status"] == "False" and cond.get("message") == message
    return obj if ok else None


async def finish(client: KubeClient, ns: str, name: str) -> None:
    """What a job integration writes when its job succeeded."""
    obj = await get_workload(client, ns, name)
    conditions = [c for c in obj["status"]["conditions"] if c["type"] != "Finished"]
    conditions.append(
        {
            "type": "Finished",
            "status": "True",
            "reason": "Succeeded",
            "message": "Job finished successfully",
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    )
    await client.merge_patch(
        WORKLOADS, name, {"status": {"conditions": conditions}}, namespace=ns, subresource="status"
    )


async def cq_status(client: KubeClient, name: str) -> dict[str, Any]:
    obj = await client.get(CLUSTER_QUEUES, name)
    status: dict[str, Any] = obj.get("status") or {}
    return status
