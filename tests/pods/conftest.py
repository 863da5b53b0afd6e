"""Plain pods and pod groups under kq, on the simulated cluster, over HTTP (both backends).

The stack is ``tests.integrations_io``'s with the ``pod`` framework on (its webhooks then
gate the namespace's pods) and v1beta1 ``podOptions`` whose selectors leave out pods, and
namespaces, labelled ``kq-test/unmanaged``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kq.config import PodOptions
from kq.runtime.errors import ApiError
from kq.runtime.resources import EVENTS, PODS, WORKLOADS, Resource
from kq.sandbox.dev import SANDBOX_FRAMEWORKS
from tests.harness import Cluster
from tests.integrations_io.conftest import QUEUE, QUEUE_LABEL, Stack, eventually, kq_stack
from tests.pods.leftovers import remove_leftovers

UNMANAGED_LABEL = "kq-test/unmanaged"
GATE = "kueue.x-k8s.io/admission"
MANAGED = "kueue.x-k8s.io/managed"
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


@pytest.fixture
async def stack(cluster: Cluster, tmp_path: Path) -> AsyncIterator[Stack]:
    unlabelled = [{"key": UNMANAGED_LABEL, "operator": "DoesNotExist"}]
    options = PodOptions(
        namespace_selector={"matchExpressions": unlabelled},
        pod_selector={"matchExpressions": unlabelled},
    )
    async with kq_stack(
        cluster, tmp_path, frameworks=(*SANDBOX_FRAMEWORKS, "pod"), pod_options=options
    ) as running:
        await running.local_queue()
        await running.cluster_queue_with_flavor(cpu="4", memory="8Gi")
        yield running
        await remove_leftovers(running)


def pod(
    name: str,
    *,
    cpu: str = "1",
    seconds: int = 60,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A bare pod of the queue; ``sleep seconds`` lasts seconds/60 on the sandbox's clock."""
    container = {
        "name": "main",
        "image": "busybox",
        "command": ["sh", "-c", f"sleep {seconds}"],
        "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}},
    }
    metadata: dict[str, Any] = {"name": name, "labels": {QUEUE_LABEL: QUEUE, **(labels or {})}}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }


def group_pod(name: str, group: str, total: int, **kwargs: Any) -> dict[str, Any]:
    body = pod(name, **kwargs)
    body["metadata"]["labels"][GROUP_LABEL] = group
    body["metadata"]["annotations"] = {
        **(body["metadata"].get("annotations") or {}),
        TOTAL_COUNT: str(total),
    }
    return body


def gates(obj: dict[str, Any]) -> list[str]:
    return [g["name"] for g in obj["spec"].get("schedulingGates") or ()]


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    found = [c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == type_]
    return found[0] if found else None


async def events_about(stack: Stack, kind: str, name: str) -> list[dict[str, Any]]:
    listing = await stack.client.list(EVENTS, namespace=stack.ns)
    return [
        e
        for e in listing.get("items") or ()
        if (e["involvedObject"].get("kind"), e["involvedObject"].get("name")) == (kind, name)
    ]


async def event(
    stack: Stack, kind: str, name: str, reason: str, message: str | None = None
) -> dict[str, Any]:
    """Until an Event with ``reason`` (and ``message``) about ``kind``/``name`` exists."""

    async def probe() -> dict[str, Any]:
        found = [
            e
            for e in await events_about(stack, kind, name)
            if e.get("reason") == reason and message in (None, e.get("message"))
        ]
        assert found, f"no {reason} event about {kind} {name}"
        return found[-1]

    return await eventually(probe, f"a {reason} event about {kind} {name}")


async def exists(stack: Stack, resource: Resource, name: str) -> bool:
    try:
        await stack.client.get(resource, name, stack.ns)
    except ApiError as error:
        if error.not_found:
            return False
        raise
    return True


async def get_pod(stack: Stack, name: str) -> dict[str, Any]:
    return await stack.client.get(PODS, name, stack.ns)


async def get_workload(stack: Stack, name: str) -> dict[str, Any]:
    return await stack.client.get(WORKLOADS, name, stack.ns)
