"""Request limits answered as kube-apiserver answers them: body and object size, nesting depth,
malformed query parameters, unsupported media types and revisions not yet reached."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from kubernetes_asyncio import client

from tests.harness import present

STATUS_FIELDS = ("code", "reason", "message")


async def _send(
    api: client.ApiClient,
    method: str,
    path: str,
    body: bytes | None = None,
    content_type: str = "application/json",
) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": content_type, "Accept": "application/json"}
    await api.update_params_for_auth(headers, [], ["BearerToken"])
    session: aiohttp.ClientSession = api.rest_client.pool_manager
    url = present(api.configuration.host) + path
    timeout = aiohttp.ClientTimeout(total=30)
    async with session.request(
        method, url, data=body, headers=headers, timeout=timeout
    ) as response:
        return response.status, json.loads(await response.read())


def _failure(status: int, body: dict[str, Any]) -> dict[str, Any]:
    assert body["kind"] == "Status", body
    assert body["code"] == status
    return {k: body.get(k) for k in STATUS_FIELDS}


def _pod(name: str, arg_bytes: int) -> bytes:
    args = ["x" * 1000] * (arg_bytes // 1000)
    container = {"name": "c", "image": "busybox", "args": args}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}}
    return json.dumps({**pod, "spec": {"containers": [container]}}).encode()


async def test_body_over_3_mib_is_413(api: client.ApiClient, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    status, body = await _send(api, "POST", pods, _pod("big", 3 * 1024 * 1024 + 1000))
    assert _failure(status, body) == {
        "code": 413,
        "reason": "RequestEntityTooLarge",
        "message": "Request entity too large: limit is 3145728",
    }
    patch = b'{"metadata":{"annotations":{"a":"' + b"x" * (3 * 1024 * 1024) + b'"}}}'
    status, body = await _send(api, "PATCH", f"{pods}/big", patch, "application/merge-patch+json")
    assert (status, body["reason"]) == (413, "RequestEntityTooLarge")


async def test_object_over_etcd_limit_is_refused(api: client.ApiClient, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    status, body = await _send(api, "POST", pods, _pod("huge", 1800 * 1024))
    # etcd's 1.5 MiB request limit, passed through as a 500 without a reason.
    assert _failure(status, body) == {
        "code": 500,
        "reason": None,
        "message": "etcdserver: request is too large",
    }
    status, _ = await _send(api, "POST", pods, _pod("fits", 1024 * 1024))
    assert status == 201
    status, _ = await _send(api, "GET", f"{pods}/huge")
    assert status == 404


async def test_deep_nesting_is_400(api: client.ApiClient, namespace: str) -> None:
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    head = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":'
    nestings = {"{": b'{"a":' * 20000 + b"1" + b"}" * 20000, "[": b"[" * 20000 + b"]" * 20000}
    for opening, nested in nestings.items():
        status, body = await _send(api, "POST", configmaps, head + nested + b"}")
        assert _failure(status, body)["code"] == 400
        assert body["reason"] == "BadRequest"
        assert body["message"].startswith(
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
            f"version/kind; json parse error: invalid character '{opening}' "
            "exceeded max depth ("
        )
    deep_yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\nx: "
    deep_yaml += b"[" * 20000 + b"]" * 20000 + b"\n"
    status, body = await _send(api, "POST", configmaps, deep_yaml, "application/yaml")
    assert (status, body["reason"]) == (400, "BadRequest")
    assert "exceeded max depth of" in body["message"]


async def test_malformed_query_parameters(api: client.ApiClient, namespace: str) -> None:
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    for query, text in (("limit=abc", "abc"), ("limit=1.5", "1.5"), ("timeoutSeconds=x", "x")):
        status, body = await _send(api, "GET", f"{configmaps}?watch=true&{query}")
        assert _failure(status, body) == {
            "code": 400,
            "reason": "BadRequest",
            "message": f'strconv.ParseInt: parsing "{text}": invalid syntax',
        }
    status, body = await _send(api, "GET", f"{configmaps}?resourceVersion=abc")
    assert _failure(status, body) == {
        "code": 500,
        "reason": None,
        "message": 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": '
        "invalid syntax",
    }


async def test_unsupported_media_types_are_415(api: client.ApiClient, namespace: str) -> None:
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    cm = json.dumps({"metadata": {"name": "plain"}}).encode()
    for media in ("text/plain", "application/x-yaml"):
        status, body = await _send(api, "POST", configmaps, cm, media)
        assert _failure(status, body) == {
            "code": 415,
            "reason": "UnsupportedMediaType",
            "message": "the body of the request was in an unknown format - accepted media "
            "types include: application/json, application/yaml, "
            "application/vnd.kubernetes.protobuf",
        }
    status, _ = await _send(api, "POST", configmaps, cm, "application/json; charset=utf-8")
    assert status == 201
    status, body = await _send(api, "PATCH", f"{configmaps}/plain", b"{}", "text/plain")
    assert _failure(status, body) == {
        "code": 415,
        "reason": "UnsupportedMediaType",
        "message": "415: Unsupported Media Type",
    }


async def test_future_resource_version(api: client.ApiClient, namespace: str) -> None:
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    status, listed = await _send(api, "GET", configmaps)
    future = int(listed["metadata"]["resourceVersion"]) + 10**9
    # A list waits up to 3 s for the revision, then gives up.
    status, body = await _send(api, "GET", f"{configmaps}?resourceVersion={future}")
    assert _failure(status, body)["code"] == 504
    assert body["reason"] == "Timeout"
    assert body["message"].startswith(f"Timeout: Too large resource version: {future}, current: ")
    assert body["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    # A watch is accepted and sees nothing until the revision is passed: not even new writes.
    query = f"?watch=true&resourceVersion={future}&timeoutSeconds=2"
    headers: dict[str, str] = {"Accept": "application/json"}
    await api.update_params_for_auth(headers, [], ["BearerToken"])
    session: aiohttp.ClientSession = api.rest_client.pool_manager
    url = present(api.configuration.host) + configmaps + query
    async with session.get(
        url, headers=headers, timeout=aiohttp.ClientTimeout(total=30)
    ) as response:
        assert response.status == 200
        v1 = client.CoreV1Api(api)
        later = {"metadata": {"name": "later"}}
        await v1.create_namespaced_config_map(namespace, later)  # type: ignore[arg-type]
        assert await response.read() == b""
