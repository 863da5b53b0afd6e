"""The ProvisioningRequest check's pure part: names, configs, objects, and check states."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from kq.admissionchecks import PENDING, READY, REJECTED, RETRY, CheckUpdate
from kq_plugins.checks.provreq_build import (
    InconsistentAssignments,
    TemplateError,
    attempt_of,
    current_request,
    limit_name,
    merge_pod_sets,
    parse_config,
    pod_template,
    request_body,
    request_name,
    request_needed,
    request_parameters,
    resolve_config,
    template_name,
)
from kq_plugins.checks.provreq_state import (
    CHECK_INACTIVE,
    NOT_NEEDED,
    backoff_seconds,
    from_request,
    inactive,
    may_create,
    next_attempt,
    not_needed,
    pod_set_updates,
)
from tests.checks.fixtures import (
    FLAVORS,
    assignment,
    check,
    condition,
    config,
    pod_set,
    request,
    workload,
)

CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS = "autoscaling.x-k8s.io/provisioning-class-name"
CFG = parse_config(config())


# -- names ------------------------------------------------------------------------------------


def test_names_join_workload_check_attempt_and_pod_set() -> None:
    assert request_name("wl", "check1", 1) == "wl-check1-1"
    assert template_name("wl-check1-1", "ps1") == "ppt-wl-check1-1-ps1"


def test_a_name_of_247_characters_is_kept_and_a_longer_one_is_cut_and_hashed() -> None:
    assert limit_name("a" * 247) == "a" * 247
    full = "a" * 247 + "b"
    short = limit_name(full)
    assert short == "a" * 247 + "-" + hashlib.sha1(full.encode()).hexdigest()[:5]
    assert len(short) == 253


def test_long_request_and_template_names_are_shortened() -> None:
    workload_name = "w" * 250
    name = request_name(workload_name, "check1", 3)
    assert len(name) == 253
    assert name.startswith("w" * 247 + "-")
    assert len(template_name(name, "main")) == 253


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("wl-check1-1", 1),
        ("wl-check1-12", 12),
        ("wl-check1-b-1", None),
        ("wl-check1-x", None),
        ("other-check1-1", None),
        ("wl-check1-", None),
    ],
)
def test_the_attempt_is_read_back_from_the_name(name: str, expected: int | None) -> None:
    assert attempt_of(name, "wl", "check1") == expected


def test_the_attempt_of_a_shortened_name_is_found_by_its_hash() -> None:
    workload_name = "w" * 250
    assert attempt_of(request_name(workload_name, "c", 3), workload_name, "c") == 3
    assert attempt_of(request_name(workload_name, "d", 3), workload_name, "c") is None


# -- config -----------------------------------------------------------------------------------


def _lookup(*configs: dict[str, Any]) -> Any:
    return {c["metadata"]["name"]: c for c in configs}.get


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        (None, "missing parameters reference"),
        (
            {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": ""},
            "empty name: bad parameters reference",
        ),
        (
            {"apiGroup": "bad.group", "kind": "ProvisioningRequestConfig", "name": "config1"},
            'wrong group "bad.group", expecting "kueue.x-k8s.io": bad parameters reference',
        ),
        (
            {"apiGroup": "kueue.x-k8s.io", "kind": "BadKind", "name": "config1"},
            'wrong kind "BadKind", expecting "ProvisioningRequestConfig": bad parameters reference',
        ),
        (
            {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "gone"},
            'provisioningrequestconfigs.kueue.x-k8s.io "gone" not found',
        ),
    ],
)
def test_a_bad_parameters_reference_says_what_is_wrong(
    parameters: dict[str, Any] | None, message: str
) -> None:
    ac = check()
    ac["spec"]["parameters"] = parameters
    assert resolve_config(ac, _lookup(config())) == message


@pytest.mark.parametrize(
    ("class_name", "message"),
    [
        ("", 'ProvisioningRequestConfig "config1": spec.provisioningClassName must be set'),
        (
            "Not_A.Class",
            'ProvisioningRequestConfig "config1": spec.provisioningClassName "Not_A.Class" '
            "is not a DNS subdomain",
        ),
    ],
)
def test_a_config_without_a_valid_class_is_unusable(class_name: str, message: str) -> None:
    assert resolve_config(check(), _lookup(config(provisioningClassName=class_name))) == message


def test_config_defaults_and_overrides() -> None:
    found = resolve_config(check(), _lookup(config()))
    assert found == CFG
    assert (CFG.backoff_limit, CFG.backoff_base, CFG.backoff_max) == (3, 60, 1800)
    custom = parse_config(
        config(
            retryStrategy={"backoffLimitCount": 0, "backoffBaseSeconds": 5},
            managedResources=["nvidia.com/gpu"],
            podSetUpdates={"nodeSelector": [{"key": "k", "valueFromProvisioningClassDetail": "d"}]},
            podSetMergePolicy="IdenticalPodTemplates",
        )
    )
    assert (custom.backoff_limit, custom.backoff_base, custom.backoff_max) == (0, 5, 1800)
    assert custom.managed_resources == {"nvidia.com/gpu"}
    assert custom.node_selector == (("k", "d"),)
    assert custom.merge_policy == "IdenticalPodTemplates"


# -- parameters -------------------------------------------------------------------------------


def test_workload_annotations_with_the_provreq_prefix_override_config_parameters() -> None:
    annotations = {
        "provreq.kueue.x-k8s.io/ValidUntilSeconds": "0",
        "provreq.kueue.x-k8s.io/p1": "from-job",
        "invalid-provreq-prefix/Foo": "Bar",
    }
    cfg = parse_config(config(parameters={"p1": "v1", "p2": "v2"}))
    assert request_parameters(workload(annotations=annotations), cfg) == {
        "p1": "from-job",
        "p2": "v2",
        "ValidUntilSeconds": "0",
    }


# -- which pod sets ---------------------------------------------------------------------------


def test_without_managed_resources_every_pod_set_with_pods_needs_capacity() -> None:
    assert request_needed(workload(), CFG)
    groups = merge_pod_sets(workload(), CFG)
    assert [(g.name, g.count) for g in groups] == [("ps1", 4), ("ps2", 3)]


def test_only_pod_sets_requesting_a_managed_resource_need_capacity() -> None:
    cfg = parse_config(config(managedResources=["memory"]))
    assert [g.name for g in merge_pod_sets(workload(), cfg)] == ["ps2"]
    assert not request_needed(workload(), parse_config(config(managedResources=["example/gpu"])))


def test_a_managed_resource_set_only_as_a_limit_counts() -> None:
    pod_sets = [pod_set("ps1", 4, {"cpu": "1"}, {"example.com/gpu": "1"}), pod_set("ps2", 4)]
    cfg = parse_config(config(managedResources=["example.com/gpu"]))
    assert [g.name for g in merge_pod_sets(workload(pod_sets), cfg)] == ["ps1"]


def test_zero_counts_need_no_capacity() -> None:
    zero_spec = workload([pod_set("ps1", 0, {"cpu": "1"})], [])
    assert not request_needed(zero_spec, CFG)
    zero_admitted = workload([pod_set("ps1", 4, {"cpu": "1"})], [assignment("ps1", 0)])
    assert not request_needed(zero_admitted, CFG)
    assert merge_pod_sets(zero_admitted, CFG) == []


def test_the_pod_set_count_stands_in_for_a_missing_admitted_count() -> None:
    wl = workload([pod_set("ps1", 4, {"cpu": "1"})], [assignment("ps1", None)])
    assert [g.count for g in merge_pod_sets(wl, CFG)] == [4]


def test_a_missing_assignment_is_inconsistent_unless_an_earlier_pod_set_decides() -> None:
    missing_first = workload(
        [pod_set("ps1", 1, {"cpu": "1"}), pod_set("ps2", 1, {"cpu": "1"})],
        [assignment("ps2", 1)],
    )
    with pytest.raises(InconsistentAssignments, match='PodSet "ps1"'):
        request_needed(missing_first, CFG)
    missing_second = workload(
        [pod_set("ps1", 1, {"cpu": "1"}), pod_set("ps2", 1, {"cpu": "1"})],
        [assignment("ps1", 1)],
    )
    assert request_needed(missing_second, CFG)
    with pytest.raises(InconsistentAssignments):
        merge_pod_sets(missing_second, CFG)


def _five_pod_sets() -> dict[str, Any]:
    sets = [
        pod_set("ps1", 1, {"cpu": "1"}),
        pod_set("ps2", 2, {"cpu": "1"}),
        pod_set("ps3", 2, {"memory": "1M"}),
        pod_set("ps4", 1, {"memory": "1M"}),
        pod_set("ps5", 1, {"memory": "1M"}),
    ]
    sets[4]["template"]["spec"]["priorityClassName"] = "high"
    sets[3]["template"]["spec"]["containers"][0]["image"] = "other"
    return workload(sets, [assignment(ps["name"], ps["count"]) for ps in sets])


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (None, [("ps1", 1), ("ps2", 2), ("ps3", 2), ("ps4", 1), ("ps5", 1)]),
        ("IdenticalPodTemplates", [("ps1", 3), ("ps3", 2), ("ps4", 1), ("ps5", 1)]),
        ("IdenticalWorkloadSchedulingRequirements", [("ps1", 3), ("ps3", 4)]),
    ],
)
def test_merge_policies_sum_counts_of_pod_sets_that_match(
    policy: str | None, expected: list[tuple[str, int]]
) -> None:
    cfg = parse_config(config(podSetMergePolicy=policy))
    groups = merge_pod_sets(_five_pod_sets(), cfg)
    assert [(g.name, g.count) for g in groups] == expected
    assert sum(len(g.members) for g in groups) == 5


# -- objects ----------------------------------------------------------------------------------


def test_the_pod_template_is_placed_on_the_assigned_flavor_and_owned_by_the_workload() -> None:
    wl = workload()
    before = copy.deepcopy(wl)
    [group, _] = merge_pod_sets(wl, CFG)
    template = pod_template(wl, group, "ppt-wl-check1-1-ps1", FLAVORS.get)
    assert wl == before
    assert template["metadata"] == {
        "name": "ppt-wl-check1-1-ps1",
        "namespace": "ns",
        "labels": {"kueue.x-k8s.io/managed": "true"},
        "ownerReferences": [
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "Workload",
                "name": "wl",
                "uid": "wl-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    spec = template["template"]["spec"]
    assert spec["nodeSelector"] == {"f1l1": "v1"}
    assert spec["tolerations"] == FLAVORS["flv1"]["spec"]["tolerations"]


def test_limits_stand_in_for_missing_requests() -> None:
    wl = workload(
        [pod_set("ps1", 1, {"cpu": "1"}, {"cpu": "2", "example.com/gpu": "1"})],
        [assignment("ps1", 1)],
    )
    template = pod_template(wl, merge_pod_sets(wl, CFG)[0], "t", FLAVORS.get)
    resources = template["template"]["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "1", "example.com/gpu": "1"}
    assert resources["limits"] == {"cpu": "2", "example.com/gpu": "1"}


def test_the_template_keeps_its_own_selector_and_a_conflict_is_an_error() -> None:
    wl = workload([pod_set("ps1", 1, {"cpu": "1"})], [assignment("ps1", 1)])
    wl["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    template = pod_template(wl, merge_pod_sets(wl, CFG)[0], "t", FLAVORS.get)
    assert template["template"]["spec"]["nodeSelector"] == {"zone": "a", "f1l1": "v1"}
    wl["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"] = {"f1l1": "other"}
    with pytest.raises(TemplateError, match="key=f1l1"):
        pod_template(wl, merge_pod_sets(wl, CFG)[0], "t", FLAVORS.get)


def test_a_missing_flavor_is_an_error() -> None:
    wl = workload([pod_set("ps1", 1, {"cpu": "1"})], [assignment("ps1", 1, "gone")])
    with pytest.raises(TemplateError, match='"gone" not found'):
        pod_template(wl, merge_pod_sets(wl, CFG)[0], "t", FLAVORS.get)


def test_the_request_body() -> None:
    wl = workload(annotations={"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "60"})
    body = request_body(wl, "wl-check1-1", CFG, [("ppt-wl-check1-1-ps1", 4)])
    assert body["apiVersion"] == "autoscaling.x-k8s.io/v1"
    assert body["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}
    assert body["metadata"]["ownerReferences"][0]["uid"] == "wl-uid"
    assert body["spec"] == {
        "provisioningClassName": "class1",
        "parameters": {"p1": "v1", "maxRunDurationSeconds": "60"},
        "podSets": [{"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 4}],
    }


def test_the_current_request_is_the_latest_attempt_in_sync_with_the_config() -> None:
    first, second = request("wl-check1-1"), request("wl-check1-2")
    stale = request("wl-check1-3", class_name="class0")
    changed = request("wl-check1-4", parameters={"p1": "v0"})
    other = request("wl-check2-9")
    found = current_request("wl", "check1", CFG, [second, stale, first, changed, other])
    assert found is second
    assert current_request("wl", "check1", CFG, [stale, other]) is None
    extra = request("wl-check1-5", parameters={"p1": "v1", "fromJob": "x"})
    assert current_request("wl", "check1", CFG, [first, extra]) is extra


# -- states -----------------------------------------------------------------------------------


def test_backoff_doubles_from_the_base_up_to_the_cap() -> None:
    assert [backoff_seconds(n, 60, 1800) for n in range(7)] == [60, 120, 240, 480, 960, 1800, 1800]
    assert backoff_seconds(0, 60, 30) == 60
    assert backoff_seconds(1, 60, 30) == 30
    assert backoff_seconds(10, 1, 0) == 1024


def _state(state: str = PENDING, **fields: Any) -> dict[str, Any]:
    return {"name": "check1", "state": state, **fields}


FAILED = [condition("Failed", message="By test")]


@pytest.mark.parametrize(("attempt", "retries", "delay"), [(1, 0, 60), (2, 1, 120), (3, 2, 240)])
def test_a_failed_request_is_retried_with_backoff(attempt: int, retries: int, delay: int) -> None:
    failed = request(f"wl-check1-{attempt}", conditions=FAILED)
    assert from_request(_state(retryCount=retries), failed, workload(), CFG) == CheckUpdate(
        "check1", RETRY, "Retrying after failure: By test", delay
    )


def test_a_failed_request_past_the_limit_rejects_the_check() -> None:
    failed = request("wl-check1-4", conditions=FAILED)
    assert from_request(_state(retryCount=3), failed, workload(), CFG) == CheckUpdate(
        "check1", REJECTED, "By test"
    )
    no_retry = parse_config(config(retryStrategy={"backoffLimitCount": 0}))
    first = request("wl-check1-1", conditions=FAILED)
    assert from_request(_state(), first, workload(), no_retry) == CheckUpdate(
        "check1", REJECTED, "By test"
    )


def test_an_attempt_already_retried_only_updates_the_message() -> None:
    failed = request("wl-check1-1", conditions=FAILED)
    current = _state(retryCount=1, requeueAfterSeconds=60)
    assert from_request(current, failed, workload(), CFG) == CheckUpdate(
        "check1", PENDING, "Retrying after failure: By test", 60
    )
    assert may_create(failed, PENDING, workload())
    assert next_attempt(failed, current, workload()) == 2


def test_the_same_retry_twice_is_no_change() -> None:
    failed = request("wl-check1-1", conditions=FAILED)
    current = _state(RETRY, message="Retrying after failure: By test", requeueAfterSeconds=60)
    assert from_request(current, failed, workload(), CFG) is None
    assert not may_create(failed, RETRY, workload())


REVOKED = [condition("Provisioned"), condition("CapacityRevoked", message="gone")]


def test_revoked_capacity_rejects_an_active_unfinished_workload() -> None:
    revoked = request(conditions=REVOKED)
    admitted = workload(conditions=[condition("Admitted")])
    assert from_request(_state(READY), revoked, admitted, CFG) == CheckUpdate(
        "check1", REJECTED, "gone"
    )
    finished = workload(conditions=[condition("Finished")])
    assert from_request(_state(READY), revoked, finished, CFG) is None
    deactivated = workload()
    deactivated["spec"]["active"] = False
    assert from_request(_state(READY), revoked, deactivated, CFG) is None


EXPIRED = [condition("Provisioned"), condition("BookingExpired", message="Expired By test")]


def test_an_expired_booking_before_admission_is_retried() -> None:
    expired = request(conditions=EXPIRED)
    assert from_request(_state(), expired, workload(), CFG) == CheckUpdate(
        "check1", RETRY, "Retrying after booking expired: Expired By test", 60
    )
    no_retry = parse_config(config(retryStrategy={"backoffLimitCount": 0}))
    assert from_request(_state(), expired, workload(), no_retry) == CheckUpdate(
        "check1", REJECTED, "Expired By test"
    )
    assert may_create(expired, PENDING, workload())


def test_an_expired_booking_after_admission_is_ignored() -> None:
    expired = request(conditions=EXPIRED)
    admitted = workload(conditions=[condition("Admitted")])
    assert from_request(_state(READY), expired, admitted, CFG) is None
    assert not may_create(expired, PENDING, admitted)


def test_a_provisioned_request_makes_the_check_ready_with_pod_set_updates() -> None:
    provisioned = request(conditions=[condition("Provisioned", message="By test")])
    assert from_request(_state(message="old"), provisioned, workload(), CFG) == CheckUpdate(
        "check1",
        READY,
        "By test",
        pod_set_updates=(
            {"name": "ps1", "annotations": {CONSUME: "wl-check1-1", CLASS: "class1"}},
            {"name": "ps2", "annotations": {CONSUME: "wl-check1-1", CLASS: "class1"}},
        ),
    )
    assert from_request(_state(READY), provisioned, workload(), CFG) is None


def test_pod_set_updates_read_node_labels_from_class_details() -> None:
    cfg = parse_config(
        config(
            podSetUpdates={
                "nodeSelector": [
                    {"key": "node-selector-key", "valueFromProvisioningClassDetail": "value"},
                    {"key": "absent", "valueFromProvisioningClassDetail": "missing"},
                ]
            }
        )
    )
    provisioned = request(conditions=[condition("Provisioned")], details={"value": "xyz"})
    updates = pod_set_updates(workload(), provisioned, cfg)
    assert [u["nodeSelector"] for u in updates] == [{"node-selector-key": "xyz"}] * 2


def test_every_merged_pod_set_gets_the_pod_set_update() -> None:
    cfg = parse_config(config(podSetMergePolicy="IdenticalPodTemplates"))
    wl = workload(
        [pod_set("ps1", 1, {"cpu": "1"}), pod_set("ps2", 2, {"cpu": "1"})],
        [assignment("ps1", 1), assignment("ps2", 2)],
    )
    provisioned = request(conditions=[condition("Provisioned")], pod_sets=("ps1",))
    assert [u["name"] for u in pod_set_updates(wl, provisioned, cfg)] == ["ps1", "ps2"]


def test_an_accepted_request_reports_the_provisioned_message() -> None:
    eta = "Provisioning Request wasn't provisioned. ETA: 2024-02-22T10:36:40Z"
    accepted = request(
        conditions=[
            condition("Failed", "False"),
            condition("Provisioned", "False", eta),
            condition("Accepted"),
        ]
    )
    assert from_request(_state(), accepted, workload(), CFG) == CheckUpdate("check1", PENDING, eta)
    only_accepted = request(conditions=[condition("Accepted")])
    assert from_request(_state(message="x"), only_accepted, workload(), CFG) is None


def test_a_request_without_conditions_keeps_the_check_pending_and_clears_its_message() -> None:
    fresh = request()
    assert from_request(_state(message="Error creating"), fresh, workload(), CFG) == CheckUpdate(
        "check1", PENDING, ""
    )
    assert from_request(_state(), fresh, workload(), CFG) is None
    assert not may_create(fresh, PENDING, workload())


def test_a_missing_config_or_no_need_for_capacity() -> None:
    assert inactive(_state(READY)) == CheckUpdate("check1", PENDING, CHECK_INACTIVE)
    assert inactive(_state(message=CHECK_INACTIVE)) is None
    assert not_needed(_state()) == CheckUpdate("check1", READY, NOT_NEEDED)
    assert not_needed(_state(READY)) is None


def test_the_first_attempt_follows_the_retry_count() -> None:
    assert may_create(None, PENDING, workload())
    assert not may_create(None, REJECTED, workload())
    assert next_attempt(None, _state(), workload()) == 1
    assert next_attempt(None, _state(retryCount=1), workload()) == 2


def test_a_refused_request_reports_why() -> None:
    why = "the sandbox's autoscaler serves a and b, not c"
    refused = request(conditions=[condition("Accepted", "False", why)])
    assert from_request(_state(), refused, workload(), CFG) == CheckUpdate("check1", PENDING, why)
