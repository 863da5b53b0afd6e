"""Status errors: HTTP code, reason and message as a real kube-apiserver answers them."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.apiserver.conftest import error_body, unique

# The `type: ignore`s on client calls: see the note on kubernetes_asyncio's stubs in conftest.py.

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


async def _status(call: Awaitable[Any]) -> dict[str, Any]:
    with pytest.raises(ApiException) as info:
        await call
    body: dict[str, Any] = json.loads(error_body(info.value))
    assert body["kind"] == "Status"
    assert body["code"] == info.value.status
    return body


async def test_common_errors(api: client.ApiClient, namespace: str) -> None:
    v1 = client.CoreV1Api(api)
    cm = {"metadata": {"name": "dup"}}
    await v1.create_namespaced_config_map(namespace, cm)  # type: ignore[arg-type]

    dup = await _status(v1.create_namespaced_config_map(namespace, cm))  # type: ignore[arg-type]
    assert (dup["code"], dup["reason"]) == (409, "AlreadyExists")
    assert dup["message"] == 'configmaps "dup" already exists'
    assert dup["details"] == {"name": "dup", "kind": "configmaps"}

    missing = await _status(v1.read_namespaced_config_map("nope", namespace))
    assert (missing["code"], missing["reason"]) == (404, "NotFound")
    assert missing["message"] == 'configmaps "nope" not found'

    no_ns = unique("absent")
    in_missing = await _status(v1.create_namespaced_config_map(no_ns, cm))  # type: ignore[arg-type]
    assert (in_missing["code"], in_missing["reason"]) == (404, "NotFound")
    assert in_missing["message"] == f'namespaces "{no_ns}" not found'

    bad_name = await _status(
        v1.create_namespaced_config_map(namespace, {"metadata": {"name": "Bad_Name"}})  # type: ignore[arg-type]
    )
    assert (bad_name["code"], bad_name["reason"]) == (422, "Invalid")
    assert bad_name["details"]["causes"][0]["field"] == "metadata.name"

    stale = {"metadata": {"resourceVersion": "1"}, "data": {"a": "b"}}
    conflict = await _status(
        v1.patch_namespaced_config_map("dup", namespace, stale, _content_type=MERGE)  # type: ignore[call-arg]
    )
    assert (conflict["code"], conflict["reason"]) == (409, "Conflict")
    assert conflict["message"].startswith('Operation cannot be fulfilled on configmaps "dup": ')

    not_a_list = await _status(
        v1.patch_namespaced_config_map("dup", namespace, {"a": 1}, _content_type=JSON_PATCH)  # type: ignore[call-arg]
    )
    assert not_a_list["code"] == 400

    failed_test = [{"op": "test", "path": "/data/a", "value": "zzz"}]
    test_op = await _status(
        v1.patch_namespaced_config_map("dup", namespace, failed_test, _content_type=JSON_PATCH)  # type: ignore[call-arg]
    )
    assert test_op["code"] == 422

    precondition = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other"))
    uid_conflict = await _status(
        v1.delete_namespaced_config_map("dup", namespace, body=precondition)
    )
    assert (uid_conflict["code"], uid_conflict["reason"]) == (409, "Conflict")


async def test_unconditional_update_and_unknown_resource(
    api: client.ApiClient, namespace: str
) -> None:
    v1 = client.CoreV1Api(api)
    await v1.create_namespaced_config_map(namespace, {"metadata": {"name": "free"}})  # type: ignore[arg-type]
    replaced = await v1.replace_namespaced_config_map(
        "free",
        namespace,
        {"metadata": {"name": "free"}, "data": {"x": "1"}},  # type: ignore[arg-type]
    )
    assert replaced.data == {"x": "1"}
    crs = client.CustomObjectsApi(api)
    unknown = await _status(
        api.call_api(
            f"/api/v1/namespaces/{namespace}/things",
            "GET",
            response_types_map={},
            auth_settings=["BearerToken"],
        )
    )
    assert (unknown["code"], unknown["reason"]) == (404, "NotFound")
    assert unknown["message"] == "the server could not find the requested resource"
    with pytest.raises(ApiException) as info:
        await crs.list_namespaced_custom_object("nothing.example.com", "v1", namespace, "things")
    assert info.value.status == 404
    assert error_body(info.value).strip() == "404 page not found"
