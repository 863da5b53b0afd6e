"""Merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kq.sandbox.apiserver.patch import (
    PatchError,
    json_equal,
    json_merge_patch,
    json_patch,
)
from kq.sandbox.apiserver.strategic import strategic_merge_patch

# --- RFC 7386 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        # The RFC 7386 appendix examples that have an object at the top.
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        ({"a": {"b": 1}}, {}, {"a": {"b": 1}}),
    ],
)
def test_json_merge_patch_rfc_examples(
    target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    before = copy.deepcopy(target)
    assert json_merge_patch(target, patch) == expected
    assert target == before


def test_merge_patch_replaces_lists_whole_like_kubectl_label() -> None:
    live = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"l": [1, 2, 3]}}
    out = json_merge_patch(
        live, {"metadata": {"labels": {"b": None, "c": "3"}}, "spec": {"l": [9]}}
    )
    assert out == {"metadata": {"labels": {"a": "1", "c": "3"}}, "spec": {"l": [9]}}


def test_merge_patch_that_is_not_an_object_is_a_bad_request() -> None:
    with pytest.raises(PatchError) as info:
        json_merge_patch({"a": 1}, [1])
    assert info.value.code == 400


_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)
json_docs = st.dictionaries(st.text(max_size=3), _json_value, max_size=4)
"""JSON objects of a few levels: merge-patch targets and patches."""


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


@given(json_docs, json_docs)
def test_merge_patch_is_idempotent(target: dict[str, Any], patch: dict[str, Any]) -> None:
    once = json_merge_patch(target, patch)
    assert json_merge_patch(once, patch) == once


@given(json_docs)
def test_merge_patch_with_a_document_without_nulls_as_patch_onto_empty_yields_it(
    doc: dict[str, Any],
) -> None:
    clean = _without_nulls(doc)
    assert json_merge_patch({}, clean) == clean


@given(json_docs, json_docs)
def test_merge_patch_keeps_untouched_keys(target: dict[str, Any], patch: dict[str, Any]) -> None:
    out = json_merge_patch(target, patch)
    for key, value in target.items():
        if key not in patch:
            assert out[key] == value


# --- RFC 6902 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "ops", "expected"),
    [
        # RFC 6902 appendix A.1-A.10, A.16.
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"foo": "bar", "baz": "qux"},
        ),
        (
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
        ),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        (
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
        ),
        (
            {"baz": "qux", "foo": "bar"},
            [{"op": "replace", "path": "/baz", "value": "boo"}],
            {"baz": "boo", "foo": "bar"},
        ),
        (
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
        ),
        (
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
        ),
        (
            {"baz": "qux", "foo": ["a", 2, "c"]},
            [
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2},
            ],
            {"baz": "qux", "foo": ["a", 2, "c"]},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
            {"foo": "bar", "child": {"grandchild": {}}},
        ),
        (
            {"foo": ["bar"]},
            [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
            {"foo": ["bar", ["abc", "def"]]},
        ),
        # Escapes: ~1 is "/", ~0 is "~" (RFC 6901).
        (
            {"metadata": {"labels": {"kq.dev/team": "a", "x~y": "b"}}},
            [
                {"op": "replace", "path": "/metadata/labels/kq.dev~1team", "value": "z"},
                {"op": "remove", "path": "/metadata/labels/x~0y"},
            ],
            {"metadata": {"labels": {"kq.dev/team": "z"}}},
        ),
        (
            {"a": {"b": 1}},
            [{"op": "copy", "from": "/a", "path": "/c"}],
            {"a": {"b": 1}, "c": {"b": 1}},
        ),
        ({"a": [1, 2, 3]}, [{"op": "remove", "path": "/a/-1"}], {"a": [1, 2]}),
        ({"a": [1, 2]}, [{"op": "add", "path": "/a/-1", "value": 9}], {"a": [1, 2, 9]}),
        # The optimistic lock kq's controller uses.
        (
            {"metadata": {"resourceVersion": "7"}, "spec": {"x": 1}},
            [
                {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                {"op": "replace", "path": "/spec/x", "value": 2},
            ],
            {"metadata": {"resourceVersion": "7"}, "spec": {"x": 2}},
        ),
        ({"a": None}, [{"op": "test", "path": "/a", "value": None}], {"a": None}),
        # Upstream quirks: a missing value is null, indices may have a sign or leading zeros.
        (
            {"a": None},
            [{"op": "test", "path": "/a"}, {"op": "add", "path": "/b"}],
            {"a": None, "b": None},
        ),
        ({"a": [1, 2]}, [{"op": "replace", "path": "/a/01", "value": 9}], {"a": [1, 9]}),
        ({"a": [1]}, [{"op": "replace", "path": "", "value": {"b": 2}}], {"b": 2}),
    ],
)
def test_json_patch_cases(doc: dict[str, Any], ops: list[Any], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(doc)
    assert json_patch(doc, ops) == expected
    assert doc == before


@pytest.mark.parametrize(
    "ops",
    [
        # RFC 6902 appendix A.9 (failed test), A.12 (adding to a missing parent), A.15.
        [{"op": "test", "path": "/baz", "value": "bar"}],
        [{"op": "add", "path": "/baz/bat", "value": "qux"}],
        [{"op": "test", "path": "/foo", "value": 1}],
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "add", "path": "/list/5", "value": 1}],
        [{"op": "add", "path": "/list/x", "value": 1}],
        [{"op": "replace", "path": "", "value": 1}],
        [{"op": "move", "from": "/obj", "path": "/obj/child"}],
        [{"op": "frobnicate", "path": "/foo"}],
        [{"op": "add", "path": "x", "value": 1}],
        [{"op": "copy", "from": "/nope", "path": "/x"}],
        [{"op": "test", "path": "/flag", "value": 1}],
    ],
)
def test_json_patch_semantic_failures_are_422(ops: list[Any]) -> None:
    doc = {"baz": "qux", "foo": "bar", "list": [1], "obj": {"a": 1}, "flag": True}
    with pytest.raises(PatchError) as info:
        json_patch(doc, ops)
    assert info.value.code == 422


def test_failed_test_op_message() -> None:
    with pytest.raises(PatchError, match="testing value /a failed"):
        json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])


@pytest.mark.parametrize("body", [{"op": "add", "path": "/a", "value": 1}, "x", [1], None])
def test_json_patch_that_is_not_a_list_of_operations_is_400(body: Any) -> None:
    # kubernetes_asyncio's CustomObjectsApi sends a dict body as json-patch.
    with pytest.raises(PatchError) as info:
        json_patch({}, body)
    assert info.value.code == 400


def test_json_patch_is_atomic_on_failure() -> None:
    doc = {"a": 1}
    with pytest.raises(PatchError):
        json_patch(
            doc, [{"op": "replace", "path": "/a", "value": 2}, {"op": "remove", "path": "/b"}]
        )
    assert doc == {"a": 1}


def test_json_equal_distinguishes_bool_from_number() -> None:
    assert not json_equal(True, 1)
    assert json_equal(1, 1.0)
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})


# --- strategic merge patch ------------------------------------------------------------------

POD = "/v1/Pod"


def _pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": list(containers), **spec}}


def test_kubectl_apply_job_patch_keeps_image_and_command() -> None:
    # The patch kubectl 1.32 sent for a Job whose parallelism and args changed (design §1).
    live = {
        "spec": {
            "parallelism": 1,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "dummy-job",
                            "image": "busybox",
                            "command": ["sh"],
                            "args": ["-c", "sleep 10"],
                            "resources": {"requests": {"cpu": "1"}},
                        }
                    ]
                }
            },
        }
    }
    patch = {
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {
            "parallelism": 2,
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "dummy-job"}],
                    "containers": [{"args": ["-c", "sleep 30"], "name": "dummy-job"}],
                }
            },
        },
    }
    out = strategic_merge_patch(live, patch, "batch/v1/Job")
    container = out["spec"]["template"]["spec"]["containers"][0]
    assert container == {
        "name": "dummy-job",
        "image": "busybox",
        "command": ["sh"],
        "args": ["-c", "sleep 30"],
        "resources": {"requests": {"cpu": "1"}},
    }
    assert out["spec"]["parallelism"] == 2
    assert out["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": "{}"
    }
    # A plain merge patch would have wiped image, command and resources.
    assert json_merge_patch(live, patch)["spec"]["template"]["spec"]["containers"][0] == {
        "args": ["-c", "sleep 30"],
        "name": "dummy-job",
    }


def test_merge_lists_of_maps_with_set_element_order() -> None:
    live = _pod({"name": "1", "other": "a"}, {"name": "2", "value": "2", "other": "b"})
    patch = {
        "spec": {
            "$setElementOrder/containers": [
                {"name": "4"},
                {"name": "1"},
                {"name": "2"},
                {"name": "3"},
            ],
            "containers": [{"name": "4", "value": "4"}, {"name": "3", "value": "3"}],
        }
    }
    assert strategic_merge_patch(live, patch, POD)["spec"]["containers"] == [
        {"name": "4", "value": "4"},
        {"name": "1", "other": "a"},
        {"name": "2", "value": "2", "other": "b"},
        {"name": "3", "value": "3"},
    ]


def test_set_element_order_with_server_only_items_keeps_them_in_server_position() -> None:
    live = _pod(
        {"name": "1", "other": "a"},
        {"name": "3", "value": "3"},
        {"name": "4", "value": "4"},
        {"name": "2", "value": "2"},
        {"name": "9"},
    )
    patch = {
        "spec": {
            "$setElementOrder/containers": [
                {"name": "4"},
                {"name": "2"},
                {"name": "3"},
                {"name": "1"},
            ]
        }
    }
    names = [c["name"] for c in strategic_merge_patch(live, patch, POD)["spec"]["containers"]]
    assert names == ["4", "2", "3", "1", "9"]


@pytest.mark.parametrize(
    ("live_names", "expected"),
    [
        # Upstream's "set elements order in a list with server-only items 2" and "... 3".
        (["1", "2", "9", "3", "4"], ["2", "1", "9", "4", "3"]),
        (["1", "2", "7", "9", "8", "3", "4"], ["2", "1", "7", "9", "8", "4", "3"]),
    ],
)
def test_server_only_items_stay_after_their_server_predecessor(
    live_names: list[str], expected: list[str]
) -> None:
    live = _pod(*({"name": n} for n in live_names))
    order = [{"name": n} for n in ("2", "1", "4", "3")]
    out = strategic_merge_patch(live, {"spec": {"$setElementOrder/containers": order}}, POD)
    assert [c["name"] for c in out["spec"]["containers"]] == expected


def test_add_item_without_order_directive_goes_before_server_items() -> None:
    # Upstream puts items new to the list first when no $setElementOrder is given.
    live = _pod({"name": "a"}, {"name": "b"})
    out = strategic_merge_patch(live, {"spec": {"containers": [{"name": "c", "image": "x"}]}}, POD)
    assert [c["name"] for c in out["spec"]["containers"]] == ["c", "a", "b"]


def test_merging_list_item_by_key_updates_only_that_item() -> None:
    live = _pod({"name": "a", "image": "1"}, {"name": "b", "image": "2"})
    out = strategic_merge_patch(live, {"spec": {"containers": [{"name": "b", "image": "3"}]}}, POD)
    assert out["spec"]["containers"] == [{"name": "a", "image": "1"}, {"name": "b", "image": "3"}]


def test_patch_delete_directive_removes_item_from_merging_list() -> None:
    live = _pod({"name": "a"}, {"name": "b"}, {"name": "a"})
    patch = {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}
    assert strategic_merge_patch(live, patch, POD)["spec"]["containers"] == [{"name": "b"}]


def test_delete_missing_item_is_a_no_op() -> None:
    live = _pod({"name": "a"})
    patch = {"spec": {"containers": [{"name": "zz", "$patch": "delete"}]}}
    assert strategic_merge_patch(live, patch, POD)["spec"]["containers"] == [{"name": "a"}]


def test_patch_replace_directive_in_list_replaces_the_list() -> None:
    live = _pod({"name": "a", "image": "1"}, {"name": "b"})
    patch = {"spec": {"containers": [{"name": "c"}, {"$patch": "replace"}]}}
    assert strategic_merge_patch(live, patch, POD)["spec"]["containers"] == [{"name": "c"}]


def test_patch_replace_directive_on_map_replaces_the_map() -> None:
    live = {"metadata": {"labels": {"a": "1", "b": "2"}}}
    patch = {"metadata": {"labels": {"c": "3", "$patch": "replace"}}}
    assert strategic_merge_patch(live, patch, POD)["metadata"]["labels"] == {"c": "3"}


def test_patch_delete_directive_on_map_empties_it() -> None:
    live = {"spec": {"nodeSelector": {"a": "1"}, "x": 1}}
    patch = {"spec": {"nodeSelector": {"$patch": "delete"}}}
    assert strategic_merge_patch(live, patch, POD)["spec"] == {"nodeSelector": {}, "x": 1}


def test_directive_only_value_for_missing_field_is_dropped() -> None:
    out = strategic_merge_patch({"spec": {}}, {"spec": {"affinity": {"$patch": "delete"}}}, POD)
    assert out == {"spec": {}}


def test_null_deletes_fields_and_nulls_inside_new_values_are_dropped() -> None:
    live = {"spec": {"a": 1, "b": 2}}
    out = strategic_merge_patch(live, {"spec": {"a": None, "c": {"d": None, "e": 1}}}, POD)
    assert out == {"spec": {"b": 2, "c": {"e": 1}}}


def test_tolerations_and_args_are_replaced_not_merged() -> None:
    live = _pod({"name": "a", "args": ["1", "2"]}, tolerations=[{"key": "x"}, {"key": "y"}])
    patch = {"spec": {"tolerations": [{"key": "z"}], "containers": [{"name": "a", "args": ["3"]}]}}
    out = strategic_merge_patch(live, patch, POD)
    assert out["spec"]["tolerations"] == [{"key": "z"}]
    assert out["spec"]["containers"] == [{"name": "a", "args": ["3"]}]


def test_env_merges_by_name_inside_container() -> None:
    live = _pod({"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]})
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "3"}]}]}}
    env = strategic_merge_patch(live, patch, POD)["spec"]["containers"][0]["env"]
    assert env == [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}]


def test_ports_merge_by_container_port_and_volume_mounts_by_mount_path() -> None:
    live = _pod(
        {
            "name": "a",
            "ports": [{"containerPort": 80, "name": "http"}],
            "volumeMounts": [{"mountPath": "/data", "name": "d"}],
        }
    )
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
                    "volumeMounts": [{"mountPath": "/data", "readOnly": True}],
                }
            ]
        }
    }
    c = strategic_merge_patch(live, patch, POD)["spec"]["containers"][0]
    assert c["ports"] == [
        {"containerPort": 80, "name": "http", "protocol": "TCP"},
        {"containerPort": 443},
    ]
    assert c["volumeMounts"] == [{"mountPath": "/data", "name": "d", "readOnly": True}]


def test_scheduling_gate_removal_by_typed_client() -> None:
    # What kubernetes_asyncio's typed patch sends to ungate a pod (design §5.11).
    live = _pod(
        {"name": "a"}, schedulingGates=[{"name": "kueue.x-k8s.io/admission"}, {"name": "other"}]
    )
    patch = {
        "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission", "$patch": "delete"}]}
    }
    assert strategic_merge_patch(live, patch, POD)["spec"]["schedulingGates"] == [{"name": "other"}]


def test_empty_merge_list_in_patch_changes_nothing_but_null_or_replace_clears() -> None:
    # Upstream semantics the controller must know: "schedulingGates: []" keeps the gates.
    live = _pod({"name": "a"}, schedulingGates=[{"name": "g"}])
    assert strategic_merge_patch(live, {"spec": {"schedulingGates": []}}, POD) == live
    cleared = strategic_merge_patch(live, {"spec": {"schedulingGates": None}}, POD)
    assert "schedulingGates" not in cleared["spec"]
    replaced = strategic_merge_patch(
        live, {"spec": {"schedulingGates": [{"$patch": "replace"}]}}, POD
    )
    assert replaced["spec"]["schedulingGates"] == []


def test_finalizers_are_a_primitive_merge_list() -> None:
    live = {"metadata": {"finalizers": ["a", "b"]}}
    out = strategic_merge_patch(live, {"metadata": {"finalizers": ["c", "a"]}}, "/v1/ConfigMap")
    assert sorted(out["metadata"]["finalizers"]) == ["a", "b", "c"]
    assert len(out["metadata"]["finalizers"]) == 3


def test_delete_from_primitive_list() -> None:
    live = {"metadata": {"finalizers": ["a", "b", "c"]}}
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zz"]}}
    assert strategic_merge_patch(live, patch, POD)["metadata"]["finalizers"] == ["a", "c"]


def test_delete_from_primitive_list_of_missing_list_does_not_create_it() -> None:
    out = strategic_merge_patch(
        {"metadata": {}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}, POD
    )
    assert out == {"metadata": {}}


def test_delete_from_non_merging_primitive_list_also_deletes() -> None:
    live = _pod({"name": "a", "args": ["1", "2", "3"]})
    patch = {"spec": {"containers": [{"name": "a", "$deleteFromPrimitiveList/args": ["2"]}]}}
    assert strategic_merge_patch(live, patch, POD)["spec"]["containers"][0]["args"] == ["1", "3"]


def test_add_and_delete_items_in_primitive_list_with_order() -> None:
    live = {"metadata": {"finalizers": ["1", "2", "3", "4"]}}
    patch = {
        "metadata": {
            "$setElementOrder/finalizers": ["1", "2", "4"],
            "$deleteFromPrimitiveList/finalizers": ["3"],
        }
    }
    assert strategic_merge_patch(live, patch, POD)["metadata"]["finalizers"] == ["1", "2", "4"]


def test_retain_keys_clears_fields_not_listed() -> None:
    live = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = strategic_merge_patch(live, patch, "apps/v1/Deployment")
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_retain_keys_must_list_every_patched_field() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}
    with pytest.raises(PatchError) as info:
        strategic_merge_patch({"spec": {"strategy": {}}}, patch, "apps/v1/Deployment")
    assert info.value.code == 400


def test_owner_references_merge_by_uid_and_conditions_by_type() -> None:
    live = {
        "metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "Other", "status": "True"},
            ]
        },
    }
    patch = {
        "metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    out = strategic_merge_patch(live, patch, POD)
    assert {o["uid"] for o in out["metadata"]["ownerReferences"]} == {"1", "2"}
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Other", "status": "True"},
    ]


def test_node_taint_and_cordon_patches() -> None:
    live = {
        "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]},
        "status": {"addresses": [{"type": "InternalIP", "address": "1"}]},
    }
    out = strategic_merge_patch(
        live,
        {"spec": {"unschedulable": True, "taints": [{"key": "b", "effect": "NoExecute"}]}},
        "/v1/Node",
    )
    assert out["spec"] == {"unschedulable": True, "taints": [{"key": "b", "effect": "NoExecute"}]}


def test_service_ports_merge_by_port() -> None:
    live = {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}
    out = strategic_merge_patch(
        live, {"spec": {"ports": [{"port": 80, "name": "http"}]}}, "/v1/Service"
    )
    assert out["spec"]["ports"] == [{"port": 80, "targetPort": 8080, "name": "http"}]


def test_pod_template_inside_deployment_and_cronjob_merges_containers() -> None:
    for kind, prefix in (
        ("apps/v1/Deployment", ("spec", "template", "spec")),
        ("apps/v1/StatefulSet", ("spec", "template", "spec")),
        ("batch/v1/CronJob", ("spec", "jobTemplate", "spec", "template", "spec")),
        ("/v1/PodTemplate", ("template", "spec")),
    ):

        def nest(value: Any, keys: tuple[str, ...] = prefix) -> Any:
            for key in reversed(keys):
                value = {key: value}
            return value

        live = nest({"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]})
        out = strategic_merge_patch(live, nest({"containers": [{"name": "b", "image": "3"}]}), kind)
        node = out
        for key in prefix:
            node = node[key]
        assert node["containers"] == [{"name": "a", "image": "1"}, {"name": "b", "image": "3"}], (
            kind
        )


def test_unknown_kind_merges_maps_and_replaces_lists() -> None:
    live = {"spec": {"items": [{"name": "a", "x": 1}], "m": {"a": 1}}}
    out = strategic_merge_patch(
        live, {"spec": {"items": [{"name": "a"}], "m": {"b": 2}}}, "example.com/v1/Thing"
    )
    assert out == {"spec": {"items": [{"name": "a"}], "m": {"a": 1, "b": 2}}}


def test_pdb_selector_is_replaced_whole() -> None:
    live = {"spec": {"selector": {"matchLabels": {"a": "1"}}}}
    out = strategic_merge_patch(
        live, {"spec": {"selector": {"matchExpressions": []}}}, "policy/v1/PodDisruptionBudget"
    )
    assert out["spec"]["selector"] == {"matchExpressions": []}


def test_type_change_replaces_value() -> None:
    out = strategic_merge_patch({"spec": {"a": {"b": 1}}}, {"spec": {"a": [1]}}, POD)
    assert out == {"spec": {"a": [1]}}


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        ({"spec": {"containers": [{"image": "no-name"}]}}, 422),
        ({"spec": {"$patch": "merge"}}, 400),
        ({"spec": {"nodeSelector": {"$patch": "bogus"}}}, 400),
        ({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}, 400),
        ({"spec": {"$setElementOrder/containers": "x"}}, 400),
        ({"spec": {"$deleteFromPrimitiveList/tolerations": "x"}}, 400),
        ({"spec": {"$unknown": 1}}, 400),
        ({"spec": {"containers": [[1]]}}, 422),
    ],
)
def test_bad_strategic_patches(patch: dict[str, Any], code: int) -> None:
    live = _pod({"name": "a"}, nodeSelector={"x": "y"})
    with pytest.raises(PatchError) as info:
        strategic_merge_patch(live, patch, POD)
    assert info.value.code == code


def test_strategic_patch_does_not_mutate_inputs() -> None:
    live = _pod({"name": "a", "env": [{"name": "X"}]})
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "a", "image": "i"}],
        }
    }
    live_copy, patch_copy = copy.deepcopy(live), copy.deepcopy(patch)
    strategic_merge_patch(live, patch, POD)
    assert live == live_copy
    assert patch == patch_copy


_maps = st.recursive(
    st.integers() | st.text(max_size=3),
    lambda children: st.dictionaries(
        st.from_regex(r"[a-z]{1,3}", fullmatch=True), children, max_size=3
    ),
    max_leaves=8,
)


@given(
    st.dictionaries(st.from_regex(r"[a-z]{1,3}", fullmatch=True), _maps, max_size=3),
    st.dictionaries(st.from_regex(r"[a-z]{1,3}", fullmatch=True), _maps | st.none(), max_size=3),
)
def test_strategic_patch_without_lists_equals_merge_patch(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    assert strategic_merge_patch(target, patch, "example.com/v1/Thing") == json_merge_patch(
        target, patch
    )


_containers = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b", "c", "d"])},
        optional={
            "image": st.sampled_from(["x", "y"]),
            "args": st.lists(st.sampled_from(["1", "2"]), max_size=2),
        },
    ),
    max_size=4,
    unique_by=lambda c: c["name"],
)


@given(_containers, _containers)
def test_strategic_patch_of_containers_is_idempotent_and_keeps_every_name(
    live: list[dict[str, Any]], patch: list[dict[str, Any]]
) -> None:
    target = {"spec": {"containers": live}}
    body = {"spec": {"containers": patch}}
    once = strategic_merge_patch(target, body, POD)
    assert strategic_merge_patch(once, body, POD) == once
    names = [c["name"] for c in once["spec"]["containers"]]
    assert sorted(names) == sorted({c["name"] for c in live + patch})
    for item in patch:
        merged = next(c for c in once["spec"]["containers"] if c["name"] == item["name"])
        assert all(merged[k] == v for k, v in item.items())
