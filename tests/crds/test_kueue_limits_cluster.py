"""Kueue v1beta1's limits on names and sizes, as both API servers answer them: 422 Statuses.

A ClusterQueue's name is a DNS subdomain of at most 253 characters (the API server holds every
custom resource's name to that; Kueue adds no tighter rule, and leaves its ClusterQueue pod
label off when the name is not a valid label value). v1beta1 takes at most 18 podSets
(``+kubebuilder:validation:MaxItems=18`` in v0.19).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kq.crds.kueue.workloads import MAX_PODSETS
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import CLUSTER_QUEUES, WORKLOADS, Resource

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def cluster_queue(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"namespaceSelector": {}},
    }


def workload(name: str, pod_sets: int) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "image": "busybox"}]}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"namespace": "default", "name": name},
        "spec": {
            "podSets": [
                {"name": f"ps{i}", "count": 1, "template": {"spec": pod}} for i in range(pod_sets)
            ]
        },
    }


async def rejected(client: KubeClient, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(ApiError) as info:
        await client.create(resource, obj)
    assert info.value.status == 422
    status = info.value.body
    assert status is not None
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Invalid", 422)
    return status


def unique(length: int) -> str:
    head = uuid.uuid4().hex[:8]
    return head + "q" * (length - len(head))


async def test_cluster_queue_names_are_dns_subdomains_of_253_characters(
    client: KubeClient,
) -> None:
    fits = unique(253)
    await client.create(CLUSTER_QUEUES, cluster_queue(fits))
    await client.delete(CLUSTER_QUEUES, fits)

    long = unique(254)
    status = await rejected(client, CLUSTER_QUEUES, cluster_queue(long))
    too_long = f'Invalid value: "{long}": must be no more than 253 characters'
    assert status["message"] == (
        f'ClusterQueue.kueue.x-k8s.io "{long}" is invalid: metadata.name: {too_long}'
    )
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": too_long, "field": "metadata.name"}
    ]

    bad = f"Team_{uuid.uuid4().hex[:6]}"
    status = await rejected(client, CLUSTER_QUEUES, cluster_queue(bad))
    assert status["message"] == (
        f'ClusterQueue.kueue.x-k8s.io "{bad}" is invalid: '
        f'metadata.name: Invalid value: "{bad}": {SUBDOMAIN}'
    )


async def test_workloads_take_at_most_18_pod_sets(client: KubeClient) -> None:
    assert MAX_PODSETS == 18
    name = f"wl-{uuid.uuid4().hex[:6]}"
    await client.create(WORKLOADS, workload(name, MAX_PODSETS))
    await client.delete(WORKLOADS, name, "default")

    status = await rejected(client, WORKLOADS, workload(name, MAX_PODSETS + 1))
    too_many = "Too many: 19: must have at most 18 items"
    assert status["message"] == (
        f'Workload.kueue.x-k8s.io "{name}" is invalid: spec.podSets: {too_many}'
    )
    assert status["details"]["causes"] == [
        {"reason": "FieldValueTooMany", "message": too_many, "field": "spec.podSets"}
    ]
