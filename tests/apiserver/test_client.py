"""kubernetes_asyncio against the server: list+watch, conflicts, status, finalizers, GC."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from tests.apiserver.conftest import error_body
from tests.harness import Cluster, eventually

# The `type: ignore`s on client calls: see the note on kubernetes_asyncio's stubs in conftest.py.

MERGE = "application/merge-patch+json"


def _cm(name: str, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}, **meta}, "data": {"k": "v"}}


async def _events(
    func: Callable[..., Awaitable[Any]], *args: Any, until: int = 0, **kwargs: Any
) -> list[tuple[str, dict[str, Any]]]:
    """Collect (type, raw object) pairs until ``until`` events or the server timeout."""
    out: list[tuple[str, dict[str, Any]]] = []
    w = watch.Watch()
    async with w:
        async for event in w.stream(func, *args, **kwargs):
            out.append((event["type"], event["raw_object"]))
            if until and len(out) >= until:
                break
    return out


async def _eventually(check: Callable[[], Awaitable[bool]]) -> None:
    await eventually(check, "the garbage and namespace controllers", within=15, interval=0.2)


async def _gone(read: Callable[[], Awaitable[Any]]) -> bool:
    try:
        await read()
    except ApiException as exc:
        return exc.status == 404
    return False


async def test_list_then_watch_resumes_from_resource_version(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_config_map(namespace, _cm("first"))  # type: ignore[arg-type]
    listed = await v1.list_namespaced_config_map(namespace)
    list_rv = listed.metadata.resource_version
    assert [cm.metadata.name for cm in listed.items] == ["first"]
    await v1.create_namespaced_config_map(namespace, _cm("second"))  # type: ignore[arg-type]
    await v1.patch_namespaced_config_map(  # type: ignore[call-arg]
        "first", namespace, {"data": {"k": "changed"}}, _content_type=MERGE
    )
    events = await _events(
        v1.list_namespaced_config_map, namespace, resource_version=list_rv, timeout_seconds=3,
        until=2,
    )  # fmt: skip
    assert [(t, o["metadata"]["name"]) for t, o in events] == [
        ("ADDED", "second"),
        ("MODIFIED", "first"),
    ]
    rvs = [int(o["metadata"]["resourceVersion"]) for _, o in events]
    assert int(list_rv) < rvs[0] < rvs[1]
    await v1.delete_namespaced_config_map("second", namespace)
    resumed = await _events(
        v1.list_namespaced_config_map, namespace, resource_version=str(rvs[1]),
        timeout_seconds=3, until=1,
    )  # fmt: skip
    assert [(t, o["metadata"]["name"]) for t, o in resumed] == [("DELETED", "second")]


async def test_stale_update_conflicts(api: client.ApiClient, namespace: str) -> None:
    v1 = client.CoreV1Api(api)
    created = await v1.create_namespaced_config_map(namespace, _cm("contended"))  # type: ignore[arg-type]
    created.data = {"k": "first writer"}
    await v1.replace_namespaced_config_map("contended", namespace, created)
    created.data = {"k": "second writer"}
    with pytest.raises(ApiException) as info:
        await v1.replace_namespaced_config_map("contended", namespace, created)
    assert info.value.status == 409
    assert '"reason":"Conflict"' in error_body(info.value).replace(" ", "")
    current = await v1.read_namespaced_config_map("contended", namespace)
    assert current.data == {"k": "first writer"}


async def test_label_selector_watch_turns_transitions_into_events(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    start = (await v1.list_namespaced_config_map(namespace)).metadata.resource_version
    await v1.create_namespaced_config_map(namespace, _cm("mover"))  # type: ignore[arg-type]
    await v1.patch_namespaced_config_map(  # type: ignore[call-arg]
        "mover", namespace, {"metadata": {"labels": {"team": "a"}}}, _content_type=MERGE
    )
    await v1.patch_namespaced_config_map(  # type: ignore[call-arg]
        "mover", namespace, {"metadata": {"labels": {"team": "b"}}}, _content_type=MERGE
    )
    events = await _events(
        v1.list_namespaced_config_map, namespace, label_selector="team=a",
        resource_version=start, timeout_seconds=3, until=2,
    )  # fmt: skip
    assert [t for t, _ in events] == ["ADDED", "DELETED"]


async def test_field_selectors_and_pagination(api: client.ApiClient, namespace: str) -> None:
    v1 = client.CoreV1Api(api)
    for i in range(5):
        await v1.create_namespaced_config_map(namespace, _cm(f"page-{i}"))  # type: ignore[arg-type]
    picked = await v1.list_namespaced_config_map(namespace, field_selector="metadata.name=page-3")
    assert [cm.metadata.name for cm in picked.items] == ["page-3"]
    names: list[str] = []
    token = None
    while True:
        page = await v1.list_namespaced_config_map(namespace, limit=2, _continue=token)  # type: ignore[arg-type]
        names.extend(cm.metadata.name for cm in page.items)
        assert len(page.items) <= 2
        token = page.metadata._continue
        if not token:
            break
    assert sorted(n for n in names if n.startswith("page-")) == [f"page-{i}" for i in range(5)]
    with pytest.raises(ApiException) as info:
        await v1.list_namespaced_config_map(namespace, field_selector="data.k=v")
    assert info.value.status == 400
    pods = await v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=nowhere")
    assert pods.items == []


async def test_watch_bookmarks_after_initial_events(api: client.ApiClient, namespace: str) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_config_map(namespace, _cm("marked"))  # type: ignore[arg-type]
    events = await _events(
        v1.list_namespaced_config_map, namespace, allow_watch_bookmarks=True,
        send_initial_events=True, resource_version_match="NotOlderThan", timeout_seconds=5,
        until=2,
    )  # fmt: skip
    assert events[0][0] == "ADDED"
    kind, bookmark = events[1]
    assert kind == "BOOKMARK"
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(
        events[0][1]["metadata"]["resourceVersion"]
    )
    assert bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"


async def test_status_subresource_and_generation(
    api: client.ApiClient, namespace: str, widget_group: str
) -> None:
    crs = client.CustomObjectsApi(api)
    args = (widget_group, "v1", namespace, "widgets")
    body = {
        "apiVersion": f"{widget_group}/v1",
        "kind": "Widget",
        "metadata": {"name": "statused"},
        "spec": {"size": 1},
        "status": {"phase": "ignored"},
    }
    created = await crs.create_namespaced_custom_object(*args, body)
    assert "status" not in created
    assert created["metadata"]["generation"] == 1
    assert created["spec"]["color"] == "blue"  # schema default
    patched = await crs.patch_namespaced_custom_object_status(  # type: ignore[call-arg]
        *args, "statused", {"status": {"phase": "Running"}}, _content_type=MERGE
    )
    assert patched["status"] == {"phase": "Running"}
    assert patched["metadata"]["generation"] == 1
    main = await crs.patch_namespaced_custom_object(  # type: ignore[call-arg]
        *args, "statused", {"spec": {"size": 2}, "status": {"phase": "Hacked"}}, _content_type=MERGE
    )
    assert main["status"] == {"phase": "Running"}
    assert main["metadata"]["generation"] == 2
    labelled = await crs.patch_namespaced_custom_object(  # type: ignore[call-arg]
        *args, "statused", {"metadata": {"labels": {"x": "y"}}}, _content_type=MERGE
    )
    assert labelled["metadata"]["generation"] == 2


async def test_finalizers_hold_deletion(api: client.ApiClient, namespace: str) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_config_map(namespace, _cm("held", finalizers=["example.com/hold"]))  # type: ignore[arg-type]
    await v1.delete_namespaced_config_map("held", namespace)
    held = await v1.read_namespaced_config_map("held", namespace)
    assert held.metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as info:
        await v1.patch_namespaced_config_map(  # type: ignore[call-arg]
            "held", namespace, {"metadata": {"finalizers": ["example.com/hold", "another"]}},
            _content_type=MERGE,
        )  # fmt: skip
    assert info.value.status == 422
    await v1.patch_namespaced_config_map(  # type: ignore[call-arg]
        "held", namespace, {"metadata": {"finalizers": None}}, _content_type=MERGE
    )
    assert await _gone(lambda: v1.read_namespaced_config_map("held", namespace))


def _owned(name: str, owner: Any, block: bool = False) -> dict[str, Any]:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": block,
    }
    return _cm(name, ownerReferences=[ref])


@pytest.mark.usefixtures("controllers")
async def test_owner_reference_garbage_collection(api: client.ApiClient, namespace: str) -> None:
    v1 = client.CoreV1Api(api)
    ns = namespace

    async def read(name: str) -> Any:
        return await v1.read_namespaced_config_map(name, ns)

    owner = await v1.create_namespaced_config_map(ns, _cm("bg-owner"))  # type: ignore[arg-type]
    await v1.create_namespaced_config_map(ns, _owned("bg-child", owner))  # type: ignore[arg-type]
    await v1.delete_namespaced_config_map(
        "bg-owner", ns, body=client.V1DeleteOptions(propagation_policy="Background")
    )
    await _eventually(lambda: _gone(lambda: read("bg-child")))

    owner = await v1.create_namespaced_config_map(ns, _cm("fg-owner"))  # type: ignore[arg-type]
    await v1.create_namespaced_config_map(
        ns, {**_owned("fg-child", owner, block=True), "metadata": {  # type: ignore[arg-type]
            **_owned("fg-child", owner, block=True)["metadata"], "finalizers": ["example.com/x"]}}
    )  # fmt: skip
    await v1.delete_namespaced_config_map(
        "fg-owner", ns, body=client.V1DeleteOptions(propagation_policy="Foreground")
    )
    waiting = await read("fg-owner")
    assert "foregroundDeletion" in waiting.metadata.finalizers
    await _eventually(lambda: _deleting(read("fg-child")))
    await v1.patch_namespaced_config_map(  # type: ignore[call-arg]
        "fg-child", ns, {"metadata": {"finalizers": None}}, _content_type=MERGE
    )
    await _eventually(lambda: _gone(lambda: read("fg-owner")))

    missing = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="never", uid="0000-missing"))
    await v1.create_namespaced_config_map(ns, _owned("dangling", missing))  # type: ignore[arg-type]
    await _eventually(lambda: _gone(lambda: read("dangling")))

    owner = await v1.create_namespaced_config_map(ns, _cm("orphan-owner"))  # type: ignore[arg-type]
    await v1.create_namespaced_config_map(ns, _owned("orphan-child", owner))  # type: ignore[arg-type]
    await v1.delete_namespaced_config_map(
        "orphan-owner", ns, body=client.V1DeleteOptions(propagation_policy="Orphan")
    )
    await _eventually(lambda: _gone(lambda: read("orphan-owner")))
    child = await read("orphan-child")
    assert not child.metadata.owner_references


async def _deleting(read: Awaitable[Any]) -> bool:
    obj = await read
    return obj.metadata.deletion_timestamp is not None


async def test_compaction_answers_410(
    cluster: Cluster, api: client.ApiClient, namespace: str
) -> None:
    if cluster.backend != "embedded":
        pytest.skip("forcing compaction needs the embedded server's fault hooks")
    v1 = client.CoreV1Api(api)
    start = (await v1.list_namespaced_config_map(namespace)).metadata.resource_version
    await v1.create_namespaced_config_map(namespace, _cm("before-compaction"))  # type: ignore[arg-type]
    await _compact(api)
    with pytest.raises(ApiException) as info:
        await _events(
            v1.list_namespaced_config_map, namespace, resource_version=start, timeout_seconds=2
        )
    assert info.value.status == 410


async def _compact(api: client.ApiClient) -> None:
    await api.call_api("/kq/compact", "POST", response_types_map={}, auth_settings=["BearerToken"])


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def test_pod_binding_eviction_and_phase_selector(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    created = await v1.create_namespaced_pod(namespace, _pod("bound"))  # type: ignore[arg-type]
    assert created.status.phase == "Pending"
    node = f"{namespace}-node"
    binding = {"metadata": {"name": "bound"}, "target": {"apiVersion": "v1", "kind": "Node",
                                                          "name": node}}  # fmt: skip
    await v1.create_namespaced_pod_binding("bound", namespace, binding, _preload_content=False)  # type: ignore[arg-type]
    pod = await v1.read_namespaced_pod("bound", namespace)
    assert pod.spec.node_name == node
    on_node = await v1.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}")
    assert [p.metadata.name for p in on_node.items] == ["bound"]
    pending = await v1.list_namespaced_pod(namespace, field_selector="status.phase=Pending")
    assert [p.metadata.name for p in pending.items] == ["bound"]
    await v1.create_namespaced_pod(namespace, _pod("evicted"))  # type: ignore[arg-type]
    eviction = {"metadata": {"name": "evicted", "namespace": namespace}}
    await v1.create_namespaced_pod_eviction("evicted", namespace, eviction, _preload_content=False)  # type: ignore[arg-type]
    assert await _gone(lambda: v1.read_namespaced_pod("evicted", namespace))


async def test_deployment_scale_subresource(api: client.ApiClient, namespace: str) -> None:
    apps = client.AppsV1Api(api)
    labels = {"app": "web"}
    deployment = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    await apps.create_namespaced_deployment(namespace, deployment)  # type: ignore[arg-type]
    scale = await apps.read_namespaced_deployment_scale("web", namespace)
    assert scale.spec.replicas == 1
    await apps.patch_namespaced_deployment_scale(  # type: ignore[call-arg]
        "web", namespace, {"spec": {"replicas": 3}}, _content_type=MERGE
    )
    assert (await apps.read_namespaced_deployment("web", namespace)).spec.replicas == 3


@pytest.mark.usefixtures("controllers")
async def test_terminating_namespace_refuses_new_content(api: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api)
    ns = f"term-{uuid.uuid4().hex[:8]}"
    await v1.create_namespace({"metadata": {"name": ns}})  # type: ignore[arg-type]
    created = await v1.read_namespace(ns)
    assert created.metadata.labels["kubernetes.io/metadata.name"] == ns
    await v1.create_namespaced_config_map(ns, _cm("pinned", finalizers=["example.com/pin"]))  # type: ignore[arg-type]
    await v1.delete_namespace(ns)
    assert (await v1.read_namespace(ns)).status.phase == "Terminating"
    await _eventually(lambda: _deleting(v1.read_namespaced_config_map("pinned", ns)))
    with pytest.raises(ApiException) as info:
        await v1.create_namespaced_config_map(ns, _cm("late"))  # type: ignore[arg-type]
    assert info.value.status == 403
    await v1.patch_namespaced_config_map(  # type: ignore[call-arg]
        "pinned", ns, {"metadata": {"finalizers": None}}, _content_type=MERGE
    )
    await _eventually(lambda: _gone(lambda: v1.read_namespace(ns)))


async def test_watch_from_a_future_revision_waits_quietly(
    api: client.ApiClient, namespace: str
) -> None:
    # Like kube-apiserver 1.32: no error, no events until the revision would exist.
    v1 = client.CoreV1Api(api)
    current = int((await v1.list_namespaced_config_map(namespace)).metadata.resource_version)
    await v1.create_namespaced_config_map(namespace, _cm("before-the-future"))  # type: ignore[arg-type]
    events = await _events(
        v1.list_namespaced_config_map, namespace, resource_version=str(current + 10**6),
        timeout_seconds=2,
    )  # fmt: skip
    assert events == []
