"""The API server takes what the ProvisioningRequest check writes, and the cleanup works."""

from __future__ import annotations

import uuid

import pytest

from kq.admissionchecks import ApiError, KubeClient, Resource
from kq_plugins.checks.provisioning import (
    POD_TEMPLATES,
    PROVISIONING_REQUEST_CONFIGS,
    PROVISIONING_REQUESTS,
    RESOURCE_FLAVORS,
    ProvisioningCheck,
)
from tests.checks.fixtures import FLAVORS, FakeContext, check, condition, config, workload

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta1", "workloads", "Workload", True)


async def test_requests_and_templates_round_trip(client: KubeClient) -> None:
    ns = f"provreq-{uuid.uuid4().hex[:8]}"
    await client.create(NAMESPACES, {"metadata": {"name": ns}})
    wl = workload(namespace=ns, annotations={"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "60"})
    made = await client.create(
        WORKLOADS, {k: wl[k] for k in ("apiVersion", "kind", "metadata")} | {"spec": wl["spec"]}
    )
    wl["metadata"]["uid"] = made["metadata"]["uid"]
    ctx = FakeContext(client)
    ctx.add(PROVISIONING_REQUEST_CONFIGS, config())
    ctx.add(RESOURCE_FLAVORS, *FLAVORS.values())

    assert await ProvisioningCheck().sync(wl, [check()], ctx) == []

    request = await client.get(PROVISIONING_REQUESTS, "wl-check1-1", ns)
    assert request["spec"]["parameters"] == {"p1": "v1", "maxRunDurationSeconds": "60"}
    assert [ps["count"] for ps in request["spec"]["podSets"]] == [4, 3]
    templates = [await client.get(POD_TEMPLATES, f"ppt-wl-check1-1-ps{i}", ns) for i in (1, 2)]
    for template in templates:
        [owner] = template["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("ProvisioningRequest", request["metadata"]["uid"])
    assert templates[0]["template"]["spec"]["nodeSelector"] == {"f1l1": "v1"}

    ctx.add(PROVISIONING_REQUESTS, request)
    ctx.add(POD_TEMPLATES, *templates)
    wl["status"]["conditions"].append(condition("Finished"))
    await ProvisioningCheck().sync(wl, [check()], ctx)
    for resource, name in [
        (PROVISIONING_REQUESTS, "wl-check1-1"),
        (POD_TEMPLATES, "ppt-wl-check1-1-ps1"),
        (POD_TEMPLATES, "ppt-wl-check1-1-ps2"),
    ]:
        with pytest.raises(ApiError) as gone:
            await client.get(resource, name, ns)
        assert gone.value.not_found
