"""How a delete's grace period and an object's finalizers end it, as kube-apiserver does."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

# The `type: ignore`s on client calls: see the note on kubernetes_asyncio's stubs in conftest.py.


def _bound_pod(name: str, node: str, finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "finalizers": finalizers or []}
    spec = {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}
    return {"metadata": meta, "spec": spec}


async def _terminating(v1: client.CoreV1Api, namespace: str, name: str, grace: int) -> Any:
    """Delete ``name`` with ``grace`` seconds and return its metadata as deleted."""
    await v1.delete_namespaced_pod(name, namespace, grace_period_seconds=grace)
    meta = (await v1.read_namespaced_pod(name, namespace)).metadata
    assert meta.deletion_grace_period_seconds == grace
    return meta


async def _gone(v1: client.CoreV1Api, namespace: str, name: str) -> None:
    with pytest.raises(ApiException) as info:
        await v1.read_namespaced_pod(name, namespace)
    assert info.value.status == 404


async def test_a_pod_in_its_grace_period_outlives_its_last_finalizer(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    pod = _bound_pod("graceful", f"{namespace}-node", ["example.com/hold"])
    await v1.create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]
    first = await _terminating(v1, namespace, "graceful", 30)
    patch = {"metadata": {"finalizers": None}}
    answer = await v1.patch_namespaced_pod("graceful", namespace, patch)
    assert answer.metadata.finalizers is None
    # Only a grace-0 delete (the kubelet's) ends it: its period has not run out.
    kept = (await v1.read_namespaced_pod("graceful", namespace)).metadata
    assert kept.finalizers is None
    assert kept.deletion_timestamp == first.deletion_timestamp
    await v1.delete_namespaced_pod("graceful", namespace, grace_period_seconds=0)
    await _gone(v1, namespace, "graceful")


async def test_removing_the_last_finalizer_answers_the_object_as_patched(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    # Unbound, so its deletion has no grace period and the last finalizer's removal ends it.
    pod = {"metadata": {"name": "last", "finalizers": ["example.com/hold"]},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    await v1.create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]
    await v1.delete_namespaced_pod("last", namespace)
    held = (await v1.read_namespaced_pod("last", namespace)).metadata
    assert held.deletion_grace_period_seconds == 0
    patch = {"metadata": {"finalizers": None}}
    answer = (await v1.patch_namespaced_pod("last", namespace, patch)).metadata
    # The object as the patch left it, which a client reads as gone; not the state stored
    # before the patch, which still lists the finalizer.
    assert answer.finalizers is None
    assert answer.deletion_timestamp == held.deletion_timestamp
    assert answer.resource_version == held.resource_version
    await _gone(v1, namespace, "last")


async def test_a_negative_grace_period_is_one_second(api: client.ApiClient, namespace: str) -> None:
    v1 = client.CoreV1Api(api)
    pod = _bound_pod("negative", f"{namespace}-node", ["example.com/hold"])
    await v1.create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]
    await v1.delete_namespaced_pod("negative", namespace, grace_period_seconds=-5)
    meta = (await v1.read_namespaced_pod("negative", namespace)).metadata
    assert meta.deletion_grace_period_seconds == 1
    await v1.patch_namespaced_pod("negative", namespace, {"metadata": {"finalizers": None}})
    await v1.delete_namespaced_pod("negative", namespace, grace_period_seconds=0)
    await _gone(v1, namespace, "negative")


async def test_a_shorter_grace_period_moves_the_deletion_earlier(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_pod(namespace, _bound_pod("slow", f"{namespace}-node"))  # type: ignore[arg-type]
    first = await _terminating(v1, namespace, "slow", 30)
    await v1.delete_namespaced_pod("slow", namespace, grace_period_seconds=60)
    longer = (await v1.read_namespaced_pod("slow", namespace)).metadata
    assert longer.deletion_grace_period_seconds == 30
    assert longer.deletion_timestamp == first.deletion_timestamp
    await v1.delete_namespaced_pod("slow", namespace, grace_period_seconds=10)
    shorter = (await v1.read_namespaced_pod("slow", namespace)).metadata
    assert shorter.deletion_grace_period_seconds == 10
    moved: timedelta = first.deletion_timestamp - shorter.deletion_timestamp
    assert moved == timedelta(seconds=20)
    await v1.delete_namespaced_pod("slow", namespace, grace_period_seconds=0)
    await _gone(v1, namespace, "slow")


async def test_grace_zero_on_a_terminating_pod_with_a_finalizer_ends_its_period_now(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    pod = _bound_pod("held", f"{namespace}-node", ["example.com/hold"])
    await v1.create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]
    first = await _terminating(v1, namespace, "held", 30)
    await v1.delete_namespaced_pod("held", namespace, grace_period_seconds=0)
    held = (await v1.read_namespaced_pod("held", namespace)).metadata
    assert held.deletion_grace_period_seconds == 0
    # Earlier by its whole period: when the first delete was made, so not after now.
    assert held.deletion_timestamp == first.deletion_timestamp - timedelta(seconds=30)
    assert held.deletion_timestamp <= datetime.now(held.deletion_timestamp.tzinfo)
    patch = {"metadata": {"finalizers": None}}
    await v1.patch_namespaced_pod("held", namespace, patch)
    await _gone(v1, namespace, "held")


async def test_a_shortened_period_that_has_run_out_ends_in_the_past(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    pod = _bound_pod("late", f"{namespace}-node", ["example.com/hold"])
    await v1.create_namespaced_pod(namespace, pod)  # type: ignore[arg-type]
    first = await _terminating(v1, namespace, "late", 2)
    await asyncio.sleep(2.5)
    await v1.delete_namespaced_pod("late", namespace, grace_period_seconds=1)
    late = (await v1.read_namespaced_pod("late", namespace)).metadata
    # Earlier by the difference of the periods though that is past: not clamped to now.
    assert late.deletion_grace_period_seconds == 1
    assert late.deletion_timestamp == first.deletion_timestamp - timedelta(seconds=1)
    await v1.patch_namespaced_pod("late", namespace, {"metadata": {"finalizers": None}})
    await v1.delete_namespaced_pod("late", namespace, grace_period_seconds=0)
    await _gone(v1, namespace, "late")


@pytest.mark.usefixtures("controllers")
async def test_a_pod_in_its_grace_period_outlives_its_foreground_deletion(
    api: client.ApiClient, namespace: str
) -> None:
    """The garbage collector ends a foreground deletion by removing its finalizer, which is no
    different from any other last finalizer: a pod whose period runs stays for the kubelet."""
    v1 = client.CoreV1Api(api)
    created = await v1.create_namespaced_pod(namespace, _bound_pod("owner", "node-a"))  # type: ignore[arg-type]
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": created.metadata.uid,
             "blockOwnerDeletion": True}  # fmt: skip
    dependent = {"metadata": {"name": "dependent", "ownerReferences": [owner]}}
    await v1.create_namespaced_config_map(namespace, dependent)  # type: ignore[arg-type]
    await v1.delete_namespaced_pod(
        "owner", namespace, grace_period_seconds=30, propagation_policy="Foreground"
    )
    for _ in range(100):
        meta = (await v1.read_namespaced_pod("owner", namespace)).metadata
        if "foregroundDeletion" not in (meta.finalizers or ()):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the foreground deletion never finished")
    with pytest.raises(ApiException) as info:
        await v1.read_namespaced_config_map("dependent", namespace)
    assert info.value.status == 404
    assert meta.deletion_grace_period_seconds == 30
    await v1.delete_namespaced_pod("owner", namespace, grace_period_seconds=0)
    await _gone(v1, namespace, "owner")
