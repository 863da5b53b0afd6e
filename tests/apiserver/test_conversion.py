"""kueue.x-k8s.io served as v1beta1 and v1beta2: what one version writes, the other reads
converted (renamed fields, restructured ones), and fields only one version has survive the
other version's writes.

The embedded server converts in process; the real kube-apiserver calls kq's conversion
webhook, which the ``converting`` fixture serves and names in the CRDs for this module.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from kq.crds.conversion import ANNOTATION
from kq.webhooks.conversion import CONVERT
from tests.apiserver.conftest import error_body
from tests.apiserver.conversion_webhook import (
    DENY_COHORT,
    FORBIDDEN_COHORT,
    conversions,
    serving,
    webhook_conversion,
)
from tests.harness import Cluster, eventually, wait_until

# The `type: ignore`s on client calls: see the note on kubernetes_asyncio's stubs in conftest.py.

GROUP = "kueue.x-k8s.io"
MERGE = "application/merge-patch+json"
CONVERTED_KINDS = ("clusterqueues", "localqueues", "workloads", "admissionchecks", "cohorts")


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _kubectl_ok(cluster: Cluster, cache: Path, *args: str, stdin: str | None = None) -> str:
    done = cluster.kubectl(*args, input=stdin, cache_dir=cache)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _wait_converting(cluster: Cluster, cache: Path) -> None:
    """Until a v1beta1 ClusterQueue reads back with v1beta2's field names."""
    probe = _name("probe")
    body = {"apiVersion": f"{GROUP}/v1beta1", "kind": "ClusterQueue",
            "metadata": {"name": probe}, "spec": {"cohort": "probe"}}  # fmt: skip
    _kubectl_ok(cluster, cache, "create", "-f", "-", stdin=json.dumps(body))

    def converted() -> bool:
        got = cluster.kubectl("get", f"clusterqueues.v1beta2.{GROUP}", probe, "-o", "json",
                              cache_dir=cache)  # fmt: skip
        return got.returncode == 0 and bool(json.loads(got.stdout)["spec"].get("cohortName"))

    try:
        wait_until(converted, "the CRDs converting through the webhook", interval=0.2)
    finally:
        cluster.kubectl("delete", "clusterqueue", probe, cache_dir=cache)


@pytest.fixture(scope="module")
def converting(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """On the real backend, this module's conversion webhook named in the CRDs of the
    converted kinds for this module (then the session's again)."""
    if cluster.backend == "embedded":
        yield
        return
    workdir = tmp_path_factory.mktemp("conversion-webhook")
    cache = workdir / "cache"
    crds = [f"{plural}.{GROUP}" for plural in CONVERTED_KINDS]
    saved = conversions(cluster, cache, crds)
    with serving(workdir) as (url, ca_bundle, _):
        patch = json.dumps({"spec": {"conversion": webhook_conversion(url, ca_bundle)}})
        try:
            for crd in crds:
                _kubectl_ok(cluster, cache, "patch", "crd", crd, "--type=merge", "-p", patch)
            _wait_converting(cluster, cache)
            _wait_served(cluster, cache, crds)
            yield
        finally:
            for crd in crds:
                undo = json.dumps({"spec": {"conversion": saved[crd]}})
                cluster.kubectl("patch", "crd", crd, "--type=merge", "-p", undo, cache_dir=cache)
            _wait_served(cluster, cache, crds)


def _wait_served(cluster: Cluster, cache: Path, crds: list[str]) -> None:
    """Until every kind lists in both versions: after a CRD's conversion changes, the API
    server re-initializes its storage and answers 429 meanwhile."""
    pending = [f"{crd.split('.', 1)[0]}.{version}.{GROUP}" for crd in crds
               for version in ("v1beta1", "v1beta2")]  # fmt: skip

    def all_served() -> bool:
        pending[:] = [
            kind for kind in pending
            if cluster.kubectl("get", kind, "-A", cache_dir=cache).returncode != 0
        ]  # fmt: skip
        return not pending

    wait_until(all_served, "every kind served after the conversion change", interval=0.2)


@pytest.fixture
def crs(api: client.ApiClient, converting: None) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


async def _create_cluster_scoped(
    crs: client.CustomObjectsApi, version: str, plural: str, body: dict[str, Any]
) -> dict[str, Any]:
    created: dict[str, Any] = await crs.create_cluster_custom_object(GROUP, version, plural, body)
    return created


def _cluster_queue(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohort": "team",
            "admissionChecks": ["prov"],
            "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
            "namespaceSelector": {},
        },
    }


async def test_a_v1beta1_cluster_queue_reads_as_v1beta2_and_back(
    crs: client.CustomObjectsApi,
) -> None:
    name = _name("cq")
    await _create_cluster_scoped(crs, "v1beta1", "clusterqueues", _cluster_queue(name))
    try:
        v2 = await crs.get_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", name)
        assert v2["apiVersion"] == f"{GROUP}/v1beta2"
        spec = v2["spec"]
        assert spec["cohortName"] == "team"
        assert "cohort" not in spec
        assert "admissionChecks" not in spec
        assert spec["admissionChecksStrategy"] == {"admissionChecks": [{"name": "prov"}]}
        assert spec["flavorFungibility"] == {
            "whenCanBorrow": "MayStopSearch",
            "whenCanPreempt": "MayStopSearch",
        }
        listed = await crs.list_cluster_custom_object(GROUP, "v1beta2", "clusterqueues")
        mine = [o for o in listed["items"] if o["metadata"]["name"] == name]
        assert [o["spec"]["cohortName"] for o in mine] == ["team"]

        # A v1beta2 client writes back what it read, with one change of its own.
        v2["spec"]["stopPolicy"] = "Hold"
        await crs.replace_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", name, v2)
        v1 = await crs.get_cluster_custom_object(GROUP, "v1beta1", "clusterqueues", name)
        assert v1["spec"]["stopPolicy"] == "Hold"
        assert v1["spec"]["cohort"] == "team"
        assert v1["spec"]["admissionChecks"] == ["prov"]
        assert "admissionChecksStrategy" not in v1["spec"]
        assert v1["spec"]["flavorFungibility"]["whenCanBorrow"] == "Borrow"
        assert ANNOTATION not in (v1["metadata"].get("annotations") or {})
    finally:
        await crs.delete_cluster_custom_object(GROUP, "v1beta1", "clusterqueues", name)


async def test_a_v1beta2_edit_of_a_renamed_field_is_what_v1beta1_reads(
    crs: client.CustomObjectsApi,
) -> None:
    name = _name("cq")
    await _create_cluster_scoped(crs, "v1beta1", "clusterqueues", _cluster_queue(name))
    try:
        patch = {"spec": {"cohortName": "other", "admissionChecksStrategy": {
            "admissionChecks": [{"name": "prov", "onFlavors": ["gpu"]}]}}}  # fmt: skip
        await crs.patch_cluster_custom_object(
            GROUP, "v1beta2", "clusterqueues", name, patch, _content_type=MERGE
        )  # type: ignore[call-arg]
        v1 = await crs.get_cluster_custom_object(GROUP, "v1beta1", "clusterqueues", name)
        assert v1["spec"]["cohort"] == "other"
        assert "admissionChecks" not in v1["spec"]
        assert v1["spec"]["admissionChecksStrategy"]["admissionChecks"][0]["onFlavors"] == ["gpu"]
    finally:
        await crs.delete_cluster_custom_object(GROUP, "v1beta1", "clusterqueues", name)


_TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def _workload_v1beta2(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": "lq",
            "priorityClassRef": {
                "group": GROUP,
                "kind": "WorkloadPriorityClass",
                "name": "high",
            },
            "priority": 100,
            "preemptionGates": [{"name": "wait-for-me"}],
            "podSets": [{"name": "main", "count": 1, "template": _TEMPLATE}],
        },
    }


async def test_a_v1beta2_workload_keeps_its_gates_through_v1beta1_writes(
    crs: client.CustomObjectsApi, namespace: str
) -> None:
    name = _name("wl")
    args = (GROUP, "v1beta1", namespace, "workloads", name)
    await crs.create_namespaced_custom_object(
        GROUP, "v1beta2", namespace, "workloads", _workload_v1beta2(name)
    )
    v1 = await crs.get_namespaced_custom_object(*args)
    assert v1["spec"]["priorityClassName"] == "high"
    assert v1["spec"]["priorityClassSource"] == f"{GROUP}/workloadpriorityclass"
    assert "priorityClassRef" not in v1["spec"]
    assert "preemptionGates" not in v1["spec"]

    # kq's own kind of write: a v1beta1 merge patch, then a status update.
    await crs.patch_namespaced_custom_object(
        *args, {"spec": {"active": False}}, _content_type=MERGE
    )  # type: ignore[call-arg]
    status = {"status": {"accumulatedPastExexcutionTimeSeconds": 42}}
    await crs.patch_namespaced_custom_object_status(*args, status, _content_type=MERGE)  # type: ignore[call-arg]

    v2 = await crs.get_namespaced_custom_object(GROUP, "v1beta2", namespace, "workloads", name)
    assert v2["spec"]["active"] is False
    assert v2["spec"]["preemptionGates"] == [{"name": "wait-for-me"}]
    assert v2["spec"]["priorityClassRef"]["name"] == "high"
    assert v2["status"]["accumulatedPastExecutionTimeSeconds"] == 42
    assert ANNOTATION not in (v2["metadata"].get("annotations") or {})


async def test_a_v1beta1_status_write_watched_in_v1beta2(
    crs: client.CustomObjectsApi, namespace: str
) -> None:
    name = _name("lq")
    body = {"apiVersion": f"{GROUP}/v1beta1", "kind": "LocalQueue",
            "metadata": {"name": name}, "spec": {"clusterQueue": "cq"}}  # fmt: skip
    await crs.create_namespaced_custom_object(GROUP, "v1beta1", namespace, "localqueues", body)
    listed = await crs.list_namespaced_custom_object(GROUP, "v1beta2", namespace, "localqueues")
    usage = [{"name": "rf", "resources": [{"name": "cpu", "total": "3"}]}]
    status = {"status": {"flavorUsage": usage, "pendingWorkloads": 1}}

    async def write_status() -> None:
        await crs.patch_namespaced_custom_object_status(
            GROUP, "v1beta1", namespace, "localqueues", name, status, _content_type=MERGE
        )  # type: ignore[call-arg]

    # The watch starts at the list's resourceVersion: it sees this write whenever it opens.
    writer = asyncio.create_task(write_status())
    seen: list[dict[str, Any]] = []
    async with watch.Watch() as stream:
        async for event in stream.stream(
            crs.list_namespaced_custom_object, GROUP, "v1beta2", namespace, "localqueues",
            resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=30,
        ):  # fmt: skip
            seen.append(event["object"])
            if (event["object"].get("status") or {}).get("flavorsUsage"):
                break
    await writer
    last = seen[-1]
    assert last["apiVersion"] == f"{GROUP}/v1beta2"
    assert last["status"]["flavorsUsage"] == usage
    assert "flavorUsage" not in last["status"]


def test_kubectl_reads_v1beta2_by_default_and_applies_both_versions(
    cluster: Cluster, kubectl_cache: Path, converting: None
) -> None:
    name = _name("ac")
    spec: dict[str, Any] = {"controllerName": "example.com/check"}
    v2 = {"apiVersion": f"{GROUP}/v1beta2", "kind": "AdmissionCheck",
          "metadata": {"name": name}, "spec": spec}  # fmt: skip
    v1 = {**v2, "apiVersion": f"{GROUP}/v1beta1", "spec": {**spec, "retryDelayMinutes": 3}}
    try:
        _kubectl_ok(cluster, kubectl_cache, "apply", "-f", "-", stdin=yaml.safe_dump(v1))
        got = json.loads(_kubectl_ok(cluster, kubectl_cache, "get", "ac", name, "-o", "json"))
        assert got["apiVersion"] == f"{GROUP}/v1beta2"
        assert "retryDelayMinutes" not in got["spec"]
        # The v1beta2 manifest, server-side applied over it, keeps v1beta1's retry delay.
        applied = {**v2, "metadata": {"name": name, "labels": {"via": "v1beta2"}}}
        _kubectl_ok(cluster, kubectl_cache, "apply", "--server-side", "-f", "-",
                    stdin=yaml.safe_dump(applied))  # fmt: skip
        resource = f"admissionchecks.v1beta1.{GROUP}"
        old = json.loads(_kubectl_ok(cluster, kubectl_cache, "get", resource, name, "-o", "json"))
        assert old["apiVersion"] == f"{GROUP}/v1beta1"
        assert old["metadata"]["labels"] == {"via": "v1beta2"}
        assert old["spec"]["retryDelayMinutes"] == 3
    finally:
        cluster.kubectl("delete", "ac", name, cache_dir=kubectl_cache)


async def test_a_webhook_for_v1beta1_sees_v1beta2_writes_in_v1beta1(
    api: client.ApiClient, crs: client.CustomObjectsApi, tmp_path: Path
) -> None:
    """matchPolicy Equivalent (the default): the request is converted to the version the
    webhook's rules name, as kq's own /validate/kueue (v1beta1 only) relies on."""
    admission = client.AdmissionregistrationV1Api(api)
    name = _name("deny-cohort")
    with serving(tmp_path) as (url, ca_bundle, _):
        hook = {
            "name": "deny-cohort.kq.example.com",
            "clientConfig": {"url": url.replace(CONVERT, DENY_COHORT), "caBundle": ca_bundle},
            "rules": [{"operations": ["CREATE"], "apiGroups": [GROUP],
                       "apiVersions": ["v1beta1"], "resources": ["clusterqueues"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
        }  # fmt: skip
        config = {"metadata": {"name": name}, "webhooks": [hook]}
        await admission.create_validating_webhook_configuration(config)  # type: ignore[arg-type]
        try:
            spec = {"cohortName": FORBIDDEN_COHORT}
            body = {"apiVersion": f"{GROUP}/v1beta2", "kind": "ClusterQueue",
                    "metadata": {"name": name}, "spec": spec}  # fmt: skip

            async def refused() -> str | None:
                try:
                    await _create_cluster_scoped(crs, "v1beta2", "clusterqueues", body)
                except ApiException as exc:
                    return error_body(exc) if exc.status == 403 else None
                # The real server may take a moment to see the new configuration.
                await crs.delete_cluster_custom_object(GROUP, "v1beta2", "clusterqueues", name)
                return None

            message = await eventually(refused, "the v1beta2 create refused by the webhook")
            assert "sent v1beta1, asked in v1beta2" in message
        finally:
            await admission.delete_validating_webhook_configuration(name)
