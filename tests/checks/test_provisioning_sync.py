"""The ProvisioningRequest check's I/O: what ``sync`` writes and reports, against fakes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kq.admissionchecks import (
    PENDING,
    READY,
    AdmissionCheckController,
    ApiError,
    CheckUpdate,
    Resource,
)
from kq_plugins.checks.provisioning import (
    POD_TEMPLATES,
    PROVISIONING_REQUEST_CONFIGS,
    PROVISIONING_REQUESTS,
    RESOURCE_FLAVORS,
    ProvisioningCheck,
)
from tests.checks.fixtures import (
    FLAVORS,
    FakeContext,
    check,
    condition,
    config,
    request,
    workload,
)

Obj = dict[str, Any]


@dataclass
class FakeClient:
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    failures: dict[tuple[str, str], ApiError] = field(default_factory=dict)
    created: dict[str, Obj] = field(default_factory=dict)

    def _call(self, verb: str, resource: Resource, name: str) -> None:
        self.calls.append((verb, resource.plural, name))
        failure = self.failures.get((verb, resource.plural))
        if failure is not None:
            raise failure

    async def create(self, resource: Resource, obj: Obj) -> Obj:
        name = obj["metadata"]["name"]
        self._call("create", resource, name)
        out = {**obj, "metadata": {**obj["metadata"], "uid": f"{name}-uid"}}
        self.created[name] = out
        return out

    async def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        self._call("delete", resource, name)
        return {}

    async def merge_patch(
        self, resource: Resource, name: str, patch: Obj, *, namespace: str | None = None
    ) -> Obj:
        self._call("patch", resource, name)
        return patch


@pytest.fixture
def ctx() -> FakeContext:
    out = FakeContext(FakeClient())
    out.add(PROVISIONING_REQUEST_CONFIGS, config())
    out.add(RESOURCE_FLAVORS, *FLAVORS.values())
    return out


def template(name: str, owner_uid: str = "wl-uid") -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "ownerReferences": [{"kind": "Workload", "uid": owner_uid, "controller": True}],
        }
    }


async def sync(ctx: FakeContext, wl: Obj) -> list[CheckUpdate]:
    return list(await ProvisioningCheck().sync(wl, [check()], ctx))


def test_it_implements_the_protocol_and_is_active_with_its_config(ctx: FakeContext) -> None:
    controller = ProvisioningCheck()
    assert isinstance(controller, AdmissionCheckController)
    assert controller.activity(check(), ctx).active
    inactive = controller.activity(check(config_name="gone"), ctx)
    assert (inactive.active, inactive.reason) == (False, "BadParametersRef")
    assert inactive.message == 'provisioningrequestconfigs.kueue.x-k8s.io "gone" not found'


async def test_a_reservation_creates_templates_then_the_request(ctx: FakeContext) -> None:
    assert await sync(ctx, workload()) == []
    assert ctx.client.calls == [
        ("create", "podtemplates", "ppt-wl-check1-1-ps1"),
        ("create", "podtemplates", "ppt-wl-check1-1-ps2"),
        ("create", "provisioningrequests", "wl-check1-1"),
        ("patch", "podtemplates", "ppt-wl-check1-1-ps1"),
        ("patch", "podtemplates", "ppt-wl-check1-1-ps2"),
    ]
    assert ctx.events == [
        ("ProvisioningRequestCreated", 'Created ProvisioningRequest: "wl-check1-1"', False)
    ]
    body = ctx.client.created["wl-check1-1"]
    assert [ps["count"] for ps in body["spec"]["podSets"]] == [4, 3]


async def test_cached_templates_are_reused(ctx: FakeContext) -> None:
    ctx.add(POD_TEMPLATES, template("ppt-wl-check1-1-ps1"))
    await sync(ctx, workload())
    assert ("create", "podtemplates", "ppt-wl-check1-1-ps1") not in ctx.client.calls


async def test_a_provisioned_request_readies_the_check(ctx: FakeContext) -> None:
    ctx.add(PROVISIONING_REQUESTS, request(conditions=[condition("Provisioned", message="ok")]))
    ctx.add(POD_TEMPLATES, *(template(f"ppt-wl-check1-1-ps{i}", "wl-check1-1-uid") for i in (1, 2)))
    [found] = await sync(ctx, workload())
    assert (found.state, found.message, len(found.pod_set_updates)) == (READY, "ok", 2)
    assert ctx.client.calls == []
    message = "Admission check check1 updated state from Pending to Ready with message: ok"
    assert ctx.events == [("AdmissionCheckUpdated", message, False)]


async def test_a_finished_workload_loses_its_requests_and_templates(ctx: FakeContext) -> None:
    ctx.add(PROVISIONING_REQUESTS, request())
    ctx.add(POD_TEMPLATES, template("ppt-wl-check1-1-ps1", "wl-check1-1-uid"))
    assert await sync(ctx, workload(conditions=[condition("Finished")])) == []
    assert ctx.client.calls == [
        ("delete", "provisioningrequests", "wl-check1-1"),
        ("delete", "podtemplates", "ppt-wl-check1-1-ps1"),
    ]


async def test_an_evicted_workload_keeps_its_requests(ctx: FakeContext) -> None:
    ctx.add(PROVISIONING_REQUESTS, request(conditions=[condition("Failed")]))
    assert await sync(ctx, workload(conditions=[condition("Evicted")])) == []
    assert ctx.client.calls == []


async def test_after_a_retry_the_next_attempt_replaces_the_failed_one(ctx: FakeContext) -> None:
    ctx.add(PROVISIONING_REQUESTS, request(conditions=[condition("Failed", message="x")]))
    wl = workload(checks=[{"name": "check1", "state": "Pending", "retryCount": 1}])
    assert await sync(ctx, wl) == []
    assert ("delete", "provisioningrequests", "wl-check1-1") in ctx.client.calls
    assert ("create", "provisioningrequests", "wl-check1-2") in ctx.client.calls


async def test_a_failure_first_asks_for_a_retry_without_a_new_request(ctx: FakeContext) -> None:
    ctx.add(PROVISIONING_REQUESTS, request(conditions=[condition("Failed", message="x")]))
    [found] = await sync(ctx, workload())
    assert (found.state, found.requeue_after_seconds) == ("Retry", 60)
    assert not [c for c in ctx.client.calls if c[0] == "create"]


async def test_a_request_out_of_sync_with_the_config_is_replaced(ctx: FakeContext) -> None:
    ctx.add(PROVISIONING_REQUESTS, request(parameters={"p1": "v0"}))
    ctx.add(POD_TEMPLATES, template("ppt-wl-check1-1-ps1", "wl-check1-1-uid"))
    await sync(ctx, workload())
    calls = ctx.client.calls
    assert calls.index(("delete", "provisioningrequests", "wl-check1-1")) < calls.index(
        ("create", "provisioningrequests", "wl-check1-1")
    )
    # The cached template is on its way out with the old request, so a new one is made.
    assert ("create", "podtemplates", "ppt-wl-check1-1-ps1") in calls


async def test_without_its_config_the_check_waits_and_its_requests_go(ctx: FakeContext) -> None:
    ctx.add(PROVISIONING_REQUESTS, request())
    found = list(await ProvisioningCheck().sync(workload(), [check(config_name="gone")], ctx))
    assert found == [CheckUpdate("check1", PENDING, "the check is not active")]
    assert ctx.client.calls == [("delete", "provisioningrequests", "wl-check1-1")]


async def test_a_failed_create_is_reported_and_retried(ctx: FakeContext) -> None:
    denied = ApiError(403, "denied", body={"message": "forbidden"})
    ctx.client.failures[("create", "provisioningrequests")] = denied
    [found] = await sync(ctx, workload())
    message = 'Error creating ProvisioningRequest "wl-check1-1": forbidden'
    assert found == CheckUpdate("check1", PENDING, message)
    assert ctx.events == [("FailedCreate", message, True)]
    assert ctx.enqueued == [("ns/wl", 1.0)]


async def test_a_request_the_cache_has_not_seen_yet_is_left_alone(ctx: FakeContext) -> None:
    ctx.client.failures[("create", "provisioningrequests")] = ApiError(409, "exists")
    assert await sync(ctx, workload()) == []
    assert ctx.events == []
    assert ctx.enqueued == []


async def test_no_request_when_no_pod_set_uses_a_managed_resource(ctx: FakeContext) -> None:
    ctx.add(PROVISIONING_REQUEST_CONFIGS, config(managedResources=["example.org/gpu"]))
    [found] = await sync(ctx, workload())
    assert found == CheckUpdate("check1", READY, "the provisioning request is not needed")
    assert ctx.client.calls == []


async def test_a_request_of_that_name_owned_by_another_is_reported(ctx: FakeContext) -> None:
    squatter = request()
    squatter["metadata"]["ownerReferences"] = []
    ctx.add(PROVISIONING_REQUESTS, squatter)
    exists = 'provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" already exists'
    ctx.client.failures[("create", "provisioningrequests")] = ApiError(
        409, "exists", body={"message": exists}
    )
    [found] = await sync(ctx, workload())
    assert found.message == f'Error creating ProvisioningRequest "wl-check1-1": {exists}'
