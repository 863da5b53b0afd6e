"""Schema validation (422 with causes), defaulting and fieldValidation Strict/Warn/Ignore."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.apiserver.conftest import error_body, widget_crd
from tests.harness import Cluster, eventually, until_passes

# The `type: ignore`s on client calls: see the note on kubernetes_asyncio's stubs in conftest.py.

MERGE = "application/merge-patch+json"


def _widget(group: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


async def _create_error(
    api: client.ApiClient, group: str, namespace: str, body: dict[str, Any], **kw: Any
) -> dict[str, Any]:
    crs = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as info:
        await crs.create_namespaced_custom_object(group, "v1", namespace, "widgets", body, **kw)
    status: dict[str, Any] = json.loads(error_body(info.value))
    assert status["code"] == info.value.status
    return status


async def _create_once_served(
    crs: client.CustomObjectsApi, group: str, namespace: str, body: dict[str, Any]
) -> None:
    """Create a Widget, retrying the 404s of a CRD that is not served yet."""

    async def create() -> Any:
        return await crs.create_namespaced_custom_object(group, "v1", namespace, "widgets", body)

    await until_passes(create, "the CRD to be served", within=20, interval=0.2, retry=_not_served)


def _not_served(exc: Exception) -> bool:
    return isinstance(exc, ApiException) and exc.status == 404


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ({}, "spec.size", "FieldValueRequired"),
        ({"size": 0}, "spec.size", "FieldValueInvalid"),
        ({"size": 1, "color": "green"}, "spec.color", "FieldValueNotSupported"),
        ({"size": "big"}, "spec.size", "FieldValueTypeInvalid"),
    ],
)
async def test_schema_violations_are_422_with_causes(
    api: client.ApiClient,
    namespace: str,
    widget_group: str,
    spec: dict[str, Any],
    field: str,
    reason: str,
) -> None:
    status = await _create_error(api, widget_group, namespace, _widget(widget_group, "bad", spec))
    assert status["code"] == 422
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(f'Widget.{widget_group} "bad" is invalid: ')
    causes = status["details"]["causes"]
    assert {"field": field, "reason": reason} in [
        {"field": c["field"], "reason": c["reason"]} for c in causes
    ]


async def test_unknown_fields_per_field_validation(
    api: client.ApiClient, namespace: str, widget_group: str
) -> None:
    crs = client.CustomObjectsApi(api)
    args = (widget_group, "v1", namespace, "widgets")
    body = _widget(widget_group, "strict", {"size": 1, "bogus": True})
    status = await _create_error(api, widget_group, namespace, body, field_validation="Strict")
    assert status["code"] == 400
    assert 'unknown field "spec.bogus"' in status["message"]

    body["metadata"]["name"] = "warned"
    created, code, headers = await crs.create_namespaced_custom_object_with_http_info(
        *args, body, field_validation="Warn"
    )
    assert code == 201
    assert "bogus" not in created["spec"]
    assert 'unknown field \\"spec.bogus\\"' in headers.get("Warning", "")

    body["metadata"]["name"] = "ignored"
    created, code, headers = await crs.create_namespaced_custom_object_with_http_info(
        *args, body, field_validation="Ignore"
    )
    assert code == 201
    assert "bogus" not in created["spec"]
    assert "Warning" not in headers


def test_kubectl_apply_rejects_unknown_and_invalid_fields(
    cluster: Cluster, kubectl_cache: Path, namespace: str, widget_group: str
) -> None:
    doc = _widget(widget_group, "via-kubectl", {"size": 1, "bogus": 1})
    doc["metadata"]["namespace"] = namespace
    unknown = cluster.kubectl(
        "apply", "-f", "-", input=yaml.safe_dump(doc), cache_dir=kubectl_cache
    )
    assert unknown.returncode == 1
    assert 'unknown field "spec.bogus"' in unknown.stderr
    doc["spec"] = {"size": -1}
    invalid = cluster.kubectl(
        "apply", "-f", "-", input=yaml.safe_dump(doc), cache_dir=kubectl_cache
    )
    assert invalid.returncode == 1
    assert "spec.size: Invalid value: -1" in invalid.stderr


async def test_job_with_unsupported_restart_policy_is_invalid(
    api: client.ApiClient, namespace: str
) -> None:
    batch = client.BatchV1Api(api)
    job = {
        "metadata": {"name": "always"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "x"}]}
            }
        },
    }
    with pytest.raises(ApiException) as info:
        await batch.create_namespaced_job(namespace, job)  # type: ignore[arg-type]
    assert info.value.status == 422
    causes = json.loads(error_body(info.value))["details"]["causes"]
    assert causes[0]["field"] == "spec.template.spec.restartPolicy"


async def test_defaults_added_to_a_crd_apply_to_stored_objects(
    api: client.ApiClient, namespace: str
) -> None:
    group = f"{uuid.uuid4().hex[:6]}.kqtest.example.com"
    crd = widget_crd(group)
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    del props["spec"]["properties"]["color"]["default"]
    extensions = client.ApiextensionsV1Api(api)
    crs = client.CustomObjectsApi(api)
    await extensions.create_custom_resource_definition(crd)  # type: ignore[arg-type]
    try:
        body = _widget(group, "old", {"size": 1})
        await _create_once_served(crs, group, namespace, body)
        live = await extensions.read_custom_resource_definition(f"widgets.{group}")
        schema = live.spec.versions[0].schema.open_apiv3_schema
        schema.properties["spec"].properties["color"].default = "red"
        await extensions.replace_custom_resource_definition(f"widgets.{group}", live)

        async def defaulted() -> bool:
            got = await crs.get_namespaced_custom_object(group, "v1", namespace, "widgets", "old")
            return bool(got["spec"].get("color") == "red")

        await eventually(defaulted, "the new default on the stored Widget", within=20, interval=0.2)
    finally:
        await extensions.delete_custom_resource_definition(f"widgets.{group}")


async def test_status_write_passes_when_a_tightened_schema_rejects_the_stored_spec(
    api: client.ApiClient, namespace: str
) -> None:
    group = f"{uuid.uuid4().hex[:6]}.kqtest.example.com"
    crd = widget_crd(group)
    extensions = client.ApiextensionsV1Api(api)
    crs = client.CustomObjectsApi(api)
    await extensions.create_custom_resource_definition(crd)  # type: ignore[arg-type]
    try:
        body = _widget(group, "w", {"size": 1})
        await _create_once_served(crs, group, namespace, body)
        live = await extensions.read_custom_resource_definition(f"widgets.{group}")
        live.spec.versions[0].schema.open_apiv3_schema.properties["spec"].properties[
            "size"
        ].minimum = 5
        await extensions.replace_custom_resource_definition(f"widgets.{group}", live)
        status = {"status": {"phase": "Running"}}

        async def tightened() -> bool:  # the new schema is in force (a dry run changes nothing)
            try:
                await crs.patch_namespaced_custom_object(  # type: ignore[call-arg]
                    group,
                    "v1",
                    namespace,
                    "widgets",
                    "w",
                    {"spec": {"size": 2}},
                    dry_run="All",
                    _content_type=MERGE,
                )
            except ApiException as exc:
                return exc.status == 422
            return False

        await eventually(tightened, "the tightened schema", within=20, interval=0.2)
        # The stored spec (size 1) breaks the new minimum, but a status write leaves it as it
        # is, and validation ratcheting lets unchanged values through.
        got = await crs.patch_namespaced_custom_object_status(  # type: ignore[call-arg]
            group, "v1", namespace, "widgets", "w", status, _content_type=MERGE
        )
        assert got["status"]["phase"] == "Running"
        assert got["spec"]["size"] == 1
    finally:
        await extensions.delete_custom_resource_definition(f"widgets.{group}")
