"""Simplified server-side apply: merging, removal of dropped fields, ownership and conflicts."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kq.sandbox.apiserver.apply import (
    ApplyConflict,
    NodeType,
    Path,
    builtin_types,
    decode_fields,
    encode_fields,
    field_set,
    path_string,
    record_update,
    schema_types,
    server_side_apply,
)
from kq.sandbox.apiserver.schema import Schema

DEPLOY = "apps/v1/Deployment"


def _deployment(replicas: int | None = 2, image: str = "i1", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "containers": [{"name": "c", "image": image, "ports": [{"containerPort": 80}]}]
            }
        }
    }
    if replicas is not None:
        spec["replicas"] = replicas
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns", "labels": {"app": "x"}},
        "spec": spec,
    }
    obj.update(extra)
    return obj


def _apply(
    live: dict[str, Any] | None, applied: dict[str, Any], manager: str = "kubectl", **kw: Any
) -> dict[str, Any]:
    kw.setdefault("force", False)
    kw.setdefault("kind", DEPLOY)
    return server_side_apply(live, applied, manager, now="2026-11-21T00:00:00Z", **kw).object


def _managers(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def test_apply_creates_with_real_fields_v1_encoding() -> None:
    result = server_side_apply(None, _deployment(), "kubectl", force=False, kind=DEPLOY, now="T")
    assert result.managed_fields == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "apps/v1",
            "time": "T",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                # Struct fields (labels) are not members themselves when applied.
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {},
                    "f:template": {
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"c"}': {
                                    ".": {},
                                    "f:image": {},
                                    "f:name": {},
                                    "f:ports": {
                                        'k:{"containerPort":80}': {".": {}, "f:containerPort": {}}
                                    },
                                }
                            }
                        }
                    },
                },
            },
        }
    ]
    assert result.object["metadata"]["managedFields"] == result.managed_fields
    assert result.object["spec"] == _deployment()["spec"]


def test_reapply_removes_fields_the_manager_no_longer_applies() -> None:
    live = _apply(None, _deployment())
    applied = _deployment(replicas=None, image="i2")
    del applied["metadata"]["labels"]
    del applied["spec"]["template"]["spec"]["containers"][0]["ports"]
    out = _apply(live, applied)
    assert out["spec"] == {"template": {"spec": {"containers": [{"name": "c", "image": "i2"}]}}}
    assert "labels" not in out["metadata"]
    assert out["metadata"]["name"] == "d"


def test_removed_field_owned_by_another_manager_is_kept() -> None:
    live = _apply(None, _deployment())
    after = copy.deepcopy(live)
    after["metadata"]["labels"]["team"] = "ml"
    after["spec"]["replicas"] = 2  # unchanged: stays kubectl's alone
    live = {
        **after,
        "metadata": {
            **after["metadata"],
            "managedFields": record_update(live, after, "kubectl-label", kind=DEPLOY),
        },
    }
    applied = _deployment(replicas=None)
    del applied["metadata"]["labels"]
    out = _apply(live, applied)
    assert out["metadata"]["labels"] == {"team": "ml"}
    assert "replicas" not in out["spec"]


def test_apply_after_edit_conflicts_then_force_moves_ownership() -> None:
    # kubectl edit (an Update) then kubectl apply --server-side with the old value.
    live = _apply(None, _deployment(replicas=2))
    edited = copy.deepcopy(live)
    edited["spec"]["replicas"] = 5
    edited["metadata"]["managedFields"] = record_update(live, edited, "kubectl-edit", kind=DEPLOY)
    with pytest.raises(ApplyConflict) as info:
        _apply(edited, _deployment(replicas=2))
    assert info.value.conflicts == [("kubectl-edit", ".spec.replicas")]
    assert str(info.value) == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas'
    )
    out = _apply(edited, _deployment(replicas=2), force=True)
    assert out["spec"]["replicas"] == 2
    assert ("kubectl-edit", "Update") not in _managers(out)
    assert "f:replicas" in _managers(out)[("kubectl", "Apply")]["f:spec"]


def test_conflict_names_a_status_writer_with_its_subresource() -> None:
    live = _apply(None, _deployment(replicas=2))
    live["metadata"]["managedFields"].append(
        {
            "manager": "ctrl",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:paused": {}}},
            "subresource": "status",
        }
    )
    live["spec"]["paused"] = True
    applied = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"paused": False}}
    with pytest.raises(ApplyConflict) as info:
        _apply(live, applied, manager="other")
    assert str(info.value) == (
        'Apply failed with 1 conflict: conflict with "ctrl" with subresource "status" '
        "using apps/v1: .spec.paused"
    )


def test_applying_the_same_value_shares_ownership_without_conflict() -> None:
    live = _apply(None, _deployment(replicas=3), manager="a")
    out = _apply(live, _deployment(replicas=3), manager="b")
    managers = _managers(out)
    assert "f:replicas" in managers[("a", "Apply")]["f:spec"]
    assert "f:replicas" in managers[("b", "Apply")]["f:spec"]
    # "b" dropping replicas leaves it: "a" still owns it.
    out = _apply(out, _deployment(replicas=None), manager="b")
    assert out["spec"]["replicas"] == 3


def test_conflicts_between_appliers_list_every_field() -> None:
    live = _apply(None, _deployment(replicas=3, image="a"), manager="a")
    with pytest.raises(ApplyConflict) as info:
        _apply(live, _deployment(replicas=4, image="b"), manager="b")
    assert sorted(info.value.conflicts) == [
        ("a", ".spec.replicas"),
        ("a", '.spec.template.spec.containers[name="c"].image'),
    ]
    assert str(info.value) == (
        'Apply failed with 2 conflicts: conflicts with "a":\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="c"].image'
    )
    assert info.value.causes[0] == {
        "reason": "FieldManagerConflict",
        "message": 'conflict with "a"',
        "field": ".spec.replicas",
    }


def test_list_map_items_of_different_managers_merge_and_are_removed_separately() -> None:
    live = _apply(None, _deployment(), manager="a")
    sidecar = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "s"}]}}},
    }
    both = _apply(live, sidecar, manager="b")
    assert [c["name"] for c in both["spec"]["template"]["spec"]["containers"]] == ["c", "sidecar"]
    only_a = {**sidecar, "spec": {"template": {"spec": {"containers": []}}}}
    out = _apply(both, only_a, manager="b")
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["c"]


def test_fields_another_manager_set_inside_my_item_survive_when_i_drop_the_item() -> None:
    live = _apply(None, _deployment(), manager="a")
    more = copy.deepcopy(live)
    more["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    more["metadata"]["managedFields"] = record_update(live, more, "vpa", kind=DEPLOY)
    applied = _deployment()
    applied["spec"]["template"]["spec"]["containers"] = []
    out = _apply(more, applied, manager="a")
    assert out["spec"]["template"]["spec"]["containers"] == [
        {"name": "c", "resources": {"limits": {"cpu": "1"}}}
    ]


def test_set_lists_union_and_remove_own_items() -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "finalizers": ["a/x"]},
        "data": {"k": "v"},
    }
    live = _apply(None, cm, kind="/v1/ConfigMap", manager="m1")
    other = {**cm, "metadata": {"name": "c", "finalizers": ["b/y"]}}
    del other["data"]
    live = _apply(live, other, kind="/v1/ConfigMap", manager="m2")
    assert live["metadata"]["finalizers"] == ["a/x", "b/y"]
    assert _managers(live)[("m1", "Apply")]["f:metadata"] == {"f:finalizers": {'v:"a/x"': {}}}
    out = _apply(live, {**cm, "metadata": {"name": "c"}}, kind="/v1/ConfigMap", manager="m1")
    assert out["metadata"]["finalizers"] == ["b/y"]
    assert out["data"] == {"k": "v"}


CRD_SCHEMA = Schema.from_openapi(
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "podSets": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "count": {"type": "integer"},
                            },
                        },
                    },
                    "args": {"type": "array", "items": {"type": "string"}},
                    "tags": {
                        "type": "array",
                        "x-kubernetes-list-type": "set",
                        "items": {"type": "string"},
                    },
                    "quota": {"type": "object", "additionalProperties": {"type": "string"}},
                    "selector": {
                        "type": "object",
                        "x-kubernetes-map-type": "atomic",
                        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                    },
                },
            }
        },
    }
)


def _wl(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": spec,
    }


def test_crd_list_map_keys_from_schema() -> None:
    types = schema_types(CRD_SCHEMA)
    live = _apply(
        None,
        _wl(podSets=[{"name": "a", "count": 1}]),
        kind="kueue.x-k8s.io/v1beta2/Workload",
        types=types,
    )
    out = _apply(
        live, _wl(podSets=[{"name": "b", "count": 2}]), manager="other", kind="x", types=types
    )
    assert out["spec"]["podSets"] == [{"name": "a", "count": 1}, {"name": "b", "count": 2}]
    fields = _managers(out)[("other", "Apply")]
    assert fields == {
        "f:spec": {"f:podSets": {'k:{"name":"b"}': {".": {}, "f:count": {}, "f:name": {}}}}
    }


def test_crd_atomic_lists_and_maps_are_replaced_and_conflict_whole() -> None:
    types = schema_types(CRD_SCHEMA)
    live = _apply(None, _wl(args=["1", "2"], selector={"a": "1", "b": "2"}), kind="x", types=types)
    assert _managers(live)[("kubectl", "Apply")]["f:spec"] == {"f:args": {}, "f:selector": {}}
    out = _apply(live, _wl(args=["3"], selector={"a": "9"}), kind="x", types=types)
    assert out["spec"] == {"args": ["3"], "selector": {"a": "9"}}
    with pytest.raises(ApplyConflict):
        _apply(out, _wl(args=["4"]), manager="other", kind="x", types=types)


def test_crd_granular_map_and_set() -> None:
    types = schema_types(CRD_SCHEMA)
    live = _apply(None, _wl(quota={"cpu": "1"}, tags=["x"]), kind="x", types=types)
    assert _managers(live)[("kubectl", "Apply")]["f:spec"] == {
        "f:quota": {"f:cpu": {}},
        "f:tags": {'v:"x"': {}},
    }
    out = _apply(live, _wl(quota={"gpu": "2"}, tags=["y"]), manager="o", kind="x", types=types)
    assert out["spec"] == {"quota": {"cpu": "1", "gpu": "2"}, "tags": ["x", "y"]}


def test_type_lookups() -> None:
    types = schema_types(CRD_SCHEMA)
    assert types(("spec", "podSets")) == NodeType("map", ("name",))
    assert types(("spec", "podSets", "count")) == NodeType()
    assert types(("spec", "tags")) == NodeType("set")
    assert types(("spec", "quota")) == NodeType(granular_map=True)
    assert types(("spec", "selector")) == NodeType(atomic_map=True)
    assert types(("spec", "nope", "deeper")) == NodeType()
    pod = builtin_types("/v1/Pod")
    assert pod(("spec", "containers")) == NodeType("map", ("name",))
    assert pod(("spec", "containers", "env")) == NodeType("map", ("name",))
    assert pod(("spec", "tolerations")) == NodeType()
    assert pod(("metadata", "finalizers")) == NodeType("set")
    assert pod(("metadata", "labels")) == NodeType(granular_map=True)


def test_list_map_item_missing_its_key_makes_the_list_atomic() -> None:
    obj = {"spec": {"containers": [{"image": "no-name"}]}}
    assert field_set(obj, builtin_types("/v1/Pod")) == {("f:spec", "f:containers")}


def test_server_set_metadata_is_never_owned() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "namespace": "n",
            "uid": "u",
            "resourceVersion": "1",
            "annotations": {"a": "b"},
        },
    }
    assert field_set(obj, builtin_types("/v1/ConfigMap")) == {
        ("f:metadata", "f:annotations", "f:a")
    }


def test_record_update_on_create_owns_everything_including_new_containers() -> None:
    # Like upstream's Update: maps and lists the write created are members too (".").
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    fields = record_update(None, cm, "kubectl-create", kind="/v1/ConfigMap", now="T")
    assert fields == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "T",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}}},
        }
    ]
    paths = decode_fields(record_update(None, _deployment(), "c", kind=DEPLOY)[0]["fieldsV1"])
    assert field_set(_deployment(), builtin_types(DEPLOY)) < paths
    assert ("f:spec", "f:template", "f:spec", "f:containers") in paths


def test_update_takes_changed_fields_from_other_managers() -> None:
    live = _apply(None, _deployment(replicas=1, image="a"))
    after = copy.deepcopy(live)
    after["spec"]["template"]["spec"]["containers"][0]["image"] = "b"
    fields = record_update(live, after, "ctrl", kind=DEPLOY, now="T")
    by_manager = {e["manager"]: decode_fields(e["fieldsV1"]) for e in fields}
    image = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"c"}', "f:image")
    assert image in by_manager["ctrl"]
    assert image not in by_manager["kubectl"]
    assert by_manager["ctrl"] == {image}


def test_record_update_drops_removed_fields_from_every_manager() -> None:
    live = _apply(None, _deployment())
    after = copy.deepcopy(live)
    del after["metadata"]["labels"]
    fields = record_update(live, after, "editor", kind=DEPLOY)
    assert [(e["manager"], e["operation"]) for e in fields] == [("kubectl", "Apply")]
    assert "f:metadata" not in fields[0]["fieldsV1"]


def test_record_update_without_changes_keeps_managed_fields() -> None:
    live = _apply(None, _deployment())
    assert (
        record_update(live, copy.deepcopy(live), "x", kind=DEPLOY)
        == live["metadata"]["managedFields"]
    )


def test_apply_without_changes_keeps_object() -> None:
    live = _apply(None, _deployment())
    again = _apply(live, _deployment())
    assert again == live


def test_repeated_apply_keeps_the_timestamp() -> None:
    first = server_side_apply(None, _deployment(), "m", force=False, kind=DEPLOY, now="T1")
    again = server_side_apply(first.object, _deployment(), "m", force=False, kind=DEPLOY, now="T2")
    assert again.managed_fields[0]["time"] == "T1"
    changed = server_side_apply(
        first.object, _deployment(replicas=9), "m", force=False, kind=DEPLOY, now="T2"
    )
    assert changed.managed_fields[0]["time"] == "T2"


def test_path_string_forms() -> None:
    assert (
        path_string(("f:spec", 'k:{"name":"c","port":80}', "f:image"))
        == '.spec[name="c",port=80].image'
    )
    assert path_string(("f:metadata", "f:finalizers", 'v:"a"')) == '.metadata.finalizers[="a"]'


_elements = st.one_of(
    st.from_regex(r"f:[a-z]{1,4}", fullmatch=True),
    st.builds(lambda v: f'k:{{"name":"{v}"}}', st.from_regex(r"[a-z]{1,3}", fullmatch=True)),
    st.builds(lambda v: f'v:"{v}"', st.from_regex(r"[a-z]{1,3}", fullmatch=True)),
)


@given(st.sets(st.lists(_elements, min_size=1, max_size=4).map(tuple), max_size=8))
def test_fields_v1_encode_decode_round_trip(paths: set[Path]) -> None:
    assert decode_fields(encode_fields(paths)) == paths


_pod_sets = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b", "c"])}, optional={"count": st.integers(1, 3)}
    ),
    max_size=3,
    unique_by=lambda p: p["name"],
)
_configs = st.fixed_dictionaries(
    {},
    optional={
        "podSets": _pod_sets,
        "args": st.lists(st.sampled_from(["x", "y"]), max_size=2),
        "tags": st.lists(st.sampled_from(["t1", "t2"]), max_size=2, unique=True),
        "quota": st.dictionaries(st.sampled_from(["cpu", "gpu"]), st.sampled_from(["1", "2"])),
    },
)


@given(_configs, _configs)
def test_apply_then_reapply_is_a_no_op_and_the_last_config_wins(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    types = schema_types(CRD_SCHEMA)

    def run(live: dict[str, Any] | None, spec: dict[str, Any]) -> dict[str, Any]:
        return server_side_apply(
            live, _wl(**spec), "m", force=False, kind="x", types=types, now="T"
        ).object

    one = run(None, first)
    two = run(one, second)
    assert run(two, second) == two
    # With a single manager the object is exactly the last applied configuration.
    got = {k: v for k, v in two.get("spec", {}).items() if v not in ({}, [])}
    want = {k: v for k, v in second.items() if v not in ({}, [])}
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        if key == "podSets":
            assert sorted(got[key], key=lambda p: p["name"]) == sorted(
                value, key=lambda p: p["name"]
            )
        elif key == "tags":
            assert sorted(got[key]) == sorted(value)
        else:
            assert got[key] == value
