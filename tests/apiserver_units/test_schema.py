"""Structural schema defaulting, pruning and validation, modelled on apiextensions behaviour."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kq.crds import builtin_crds
from kq.sandbox.apiserver.schema import (
    REASONS,
    FieldError,
    Schema,
    compile_go_regex,
    format_value,
    structural_errors,
)


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


def _crd_schema(kind: str) -> Schema:
    for crd in builtin_crds():
        if crd["spec"]["names"]["kind"] == kind:
            return Schema.from_openapi(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    raise AssertionError(kind)


# --- defaulting ---------------------------------------------------------------------------


def test_cluster_queue_defaults_including_nested_defaults_of_an_empty_object() -> None:
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "spec": {}}
    out = _crd_schema("ClusterQueue").default(cq)
    assert out["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert out["spec"]["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }
    assert out["spec"]["preemption"]["withinClusterQueue"] == "Never"
    assert cq["spec"] == {}


def test_workload_pod_set_defaults_apply_inside_array_items() -> None:
    wl = {"spec": {"podSets": [{"template": {}}, {"name": "w", "count": 3, "template": {}}]}}
    out = _crd_schema("Workload").default(wl)
    assert [(p["name"], p["count"]) for p in out["spec"]["podSets"]] == [("main", 1), ("w", 3)]
    assert out["spec"]["active"] is True


def test_defaults_only_fill_missing_fields() -> None:
    s = Schema.from_openapi(_obj(spec=_obj(a={"type": "string", "default": "x"})))
    assert s.default({"spec": {"a": "mine"}}) == {"spec": {"a": "mine"}}
    assert s.default({"spec": {}}) == {"spec": {"a": "x"}}
    assert s.default({}) == {}


def test_defaults_apply_inside_additional_properties() -> None:
    s = Schema.from_openapi(
        _obj(
            m={"type": "object", "additionalProperties": _obj(n={"type": "integer", "default": 1})}
        )
    )
    assert s.default({"m": {"a": {}, "b": {"n": 5}}}) == {"m": {"a": {"n": 1}, "b": {"n": 5}}}


def test_null_and_defaulting_interplay() -> None:
    s = Schema.from_openapi(
        _obj(
            withDefault={"type": "string", "default": "d"},
            nullableWithDefault={"type": "string", "nullable": True, "default": "d"},
            plain={"type": "string"},
            nullablePlain={"type": "string", "nullable": True},
            items={"type": "array", "items": {"type": "string", "default": "i"}},
            noDefaultItems={"type": "array", "items": {"type": "string"}},
        )
    )
    out = s.default(
        {
            "withDefault": None,
            "nullableWithDefault": None,
            "plain": None,
            "nullablePlain": None,
            "items": [None, "x"],
            "noDefaultItems": [None],
        }
    )
    assert out == {
        # A null for a non-nullable field with a default becomes the default.
        "withDefault": "d",
        # A nullable field keeps an explicit null.
        "nullableWithDefault": None,
        # "plain" (non-nullable, no default) is dropped; a nullable one keeps null.
        "nullablePlain": None,
        "items": ["i", "x"],
        # Array items are not dropped; without a default the null stays.
        "noDefaultItems": [None],
    }


def test_default_is_deep_copied() -> None:
    s = Schema.from_openapi(_obj(a={"type": "object", "default": {"l": [1]}}))
    first = s.default({})
    first["a"]["l"].append(2)
    assert s.default({}) == {"a": {"l": [1]}}


# --- pruning ------------------------------------------------------------------------------

PRUNE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "known": {"type": "string"},
                "items": {"type": "array", "items": _obj(name={"type": "string"})},
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"typed": _obj(a={"type": "string"})},
                },
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": _obj(x={"type": "string"})},
                },
                "labels": {"type": "object", "additionalProperties": _obj(v={"type": "string"})},
            },
        },
        "status": _obj(),
    },
}


def test_prune_drops_unknown_fields_and_reports_kubernetes_paths() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "unknownMeta": 1},
        "spec": {
            "known": "k",
            "unknown": 1,
            "items": [{"name": "a", "bar": 1}, {"name": "b"}],
            "free": {"anything": {"goes": 1}, "typed": {"a": "x", "b": "dropped"}},
            "template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"labels": {"a": "b"}},
                "spec": {"x": "1", "y": "2"},
                "other": 1,
            },
            "labels": {"k": {"v": "1", "w": "2"}},
        },
        "extra": True,
    }
    out, dropped = Schema.from_openapi(PRUNE_SCHEMA).prune(obj)
    assert dropped == [
        "extra",
        "spec.free.typed.b",
        "spec.items[0].bar",
        "spec.labels.k.w",
        "spec.template.other",
        "spec.template.spec.y",
        "spec.unknown",
    ]
    assert out["metadata"] == {"name": "t", "unknownMeta": 1}
    assert out["spec"]["free"]["anything"] == {"goes": 1}
    assert out["spec"]["template"]["metadata"] == {"labels": {"a": "b"}}
    assert out["spec"]["template"]["apiVersion"] == "v1"
    assert out["spec"]["items"] == [{"name": "a"}, {"name": "b"}]
    assert obj["spec"]["unknown"] == 1


def test_prune_under_unknown_field_reports_only_the_top_path() -> None:
    out, dropped = Schema.from_openapi(_obj(spec=_obj())).prune({"spec": {"a": {"b": {"c": 1}}}})
    assert dropped == ["spec.a"]
    assert out == {"spec": {}}


def test_nested_metadata_is_pruned_when_not_embedded() -> None:
    _, dropped = Schema.from_openapi(_obj(spec=_obj())).prune({"spec": {"metadata": {}}})
    assert dropped == ["spec.metadata"]


def test_preserve_unknown_fields_at_root_keeps_everything() -> None:
    s = Schema.from_openapi({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    out, dropped = s.prune({"spec": {"anything": [1, {"x": 2}]}})
    assert dropped == []
    assert out == {"spec": {"anything": [1, {"x": 2}]}}


_plain = st.recursive(
    st.integers() | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=2)
        | st.dictionaries(st.from_regex(r"[a-z]{1,3}", fullmatch=True), children, max_size=3)
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.from_regex(r"[a-z]{1,4}", fullmatch=True), _plain, max_size=4))
def test_prune_is_idempotent_and_reports_what_it_drops(spec: dict[str, Any]) -> None:
    s = Schema.from_openapi(PRUNE_SCHEMA)
    once, dropped = s.prune({"spec": spec})
    twice, dropped_again = s.prune(once)
    assert twice == once
    assert dropped_again == []
    assert len(dropped) >= len(
        [k for k in spec if k not in PRUNE_SCHEMA["properties"]["spec"]["properties"]]
    )


# --- validation ---------------------------------------------------------------------------


def _errors(schema: dict[str, Any], obj: Any) -> list[tuple[str, str, str]]:
    return [(e.field, e.reason, e.message) for e in Schema.from_openapi(schema).validate(obj)]


def test_type_error_message_matches_upstream() -> None:
    assert _errors(_obj(spec=_obj(x={"type": "integer"})), {"spec": {"x": "string"}}) == [
        (
            "spec.x",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.x in body must be of type integer: "string"',
        )
    ]


@pytest.mark.parametrize(
    ("schema_type", "value", "actual"),
    [
        ("string", 5, "integer"),
        ("string", 1.5, "number"),
        ("integer", 1.5, "number"),
        ("boolean", "true", "string"),
        ("object", [], "array"),
        ("array", {}, "object"),
        ("number", False, "boolean"),
        ("string", None, "null"),
    ],
)
def test_type_mismatch_names_the_json_type(schema_type: str, value: Any, actual: str) -> None:
    errs = _errors(_obj(f={"type": schema_type}), {"f": value})
    assert errs == [
        (
            "f",
            "FieldValueTypeInvalid",
            f'Invalid value: "{actual}": f in body must be of type {schema_type}: "{actual}"',
        )
    ]


@pytest.mark.parametrize(
    ("schema_type", "value"),
    [("integer", 3), ("integer", 3.0), ("number", 3), ("number", 2.5), ("boolean", True)],
)
def test_numbers_accepted_like_upstream(schema_type: str, value: Any) -> None:
    assert _errors(_obj(f={"type": schema_type}), {"f": value}) == []


def test_nullable_accepts_null() -> None:
    assert _errors(_obj(f={"type": "string", "nullable": True}), {"f": None}) == []


def test_int_or_string() -> None:
    schema = _obj(q={"x-kubernetes-int-or-string": True})
    assert _errors(schema, {"q": 1}) == []
    assert _errors(schema, {"q": "1Gi"}) == []
    assert _errors(schema, {"q": True}) == [
        (
            "q",
            "FieldValueTypeInvalid",
            'Invalid value: "boolean": q in body must be of type integer,string: "boolean"',
        )
    ]


def test_quantity_int_or_string_with_any_of_pattern() -> None:
    schema = _obj(
        q={
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
            "pattern": "^[0-9]+$",
        }
    )
    assert _errors(schema, {"q": "12"}) == []
    assert _errors(schema, {"q": 12}) == []
    assert [e[1] for e in _errors(schema, {"q": "x"})] == ["FieldValueInvalid"]


def test_required() -> None:
    schema = {
        "type": "object",
        "properties": {"spec": {**_obj(a={"type": "string"}), "required": ["a", "b"]}},
    }
    assert _errors(schema, {"spec": {"a": "x"}}) == [
        ("spec.b", "FieldValueRequired", "Required value")
    ]


def test_enum_not_supported_message() -> None:
    schema = _obj(s={"type": "string", "enum": ["A", "B"]}, n={"type": "integer", "enum": [1, 2]})
    assert _errors(schema, {"s": "X", "n": 3}) == [
        ("s", "FieldValueNotSupported", 'Unsupported value: "X": supported values: "A", "B"'),
        ("n", "FieldValueNotSupported", 'Unsupported value: 3: supported values: "1", "2"'),
    ]


def test_type_mismatch_does_not_stop_other_checks() -> None:
    schema = _obj(s={"type": "string", "enum": ["A"]}, n={"type": "string", "enum": ["A"]})
    assert _errors(schema, {"s": 5, "n": None}) == [
        (
            "s",
            "FieldValueTypeInvalid",
            'Invalid value: "integer": s in body must be of type string: "integer"',
        ),
        ("s", "FieldValueNotSupported", 'Unsupported value: 5: supported values: "A"'),
        (
            "n",
            "FieldValueTypeInvalid",
            'Invalid value: "null": n in body must be of type string: "null"',
        ),
        ("n", "FieldValueNotSupported", 'Unsupported value: null: supported values: "A"'),
    ]


def test_numeric_bounds() -> None:
    schema = _obj(
        a={"type": "integer", "minimum": 1, "maximum": 10},
        b={"type": "integer", "minimum": 1, "exclusiveMinimum": True},
        c={"type": "number", "maximum": 2.5, "exclusiveMaximum": True},
        d={"type": "integer", "multipleOf": 4},
    )
    assert _errors(schema, {"a": 0, "b": 1, "c": 2.5, "d": 6}) == [
        (
            "a",
            "FieldValueInvalid",
            "Invalid value: 0: a in body should be greater than or equal to 1",
        ),
        ("b", "FieldValueInvalid", "Invalid value: 1: b in body should be greater than 1"),
        ("c", "FieldValueInvalid", "Invalid value: 2.5: c in body should be less than 2.5"),
        ("d", "FieldValueInvalid", "Invalid value: 6: d in body should be a multiple of 4"),
    ]
    assert _errors(schema, {"a": 11})[0][2] == (
        "Invalid value: 11: a in body should be less than or equal to 10"
    )
    assert _errors(schema, {"a": 10, "b": 2, "c": 2.4, "d": 8}) == []


def test_string_constraints() -> None:
    schema = _obj(
        s={"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"},
        one={"type": "string", "maxLength": 1},
    )
    assert _errors(schema, {"s": "ABCD", "one": "xy"}) == [
        ("s", "FieldValueTooLong", "Too long: may not be more than 3 bytes"),
        ("s", "FieldValueInvalid", "Invalid value: \"ABCD\": s in body should match '^[a-z]+$'"),
        ("one", "FieldValueTooLong", "Too long: may not be more than 1 byte"),
    ]
    assert _errors(schema, {"s": "a"}) == [
        ("s", "FieldValueInvalid", 'Invalid value: "a": s in body should be at least 2 chars long')
    ]


def test_go_inline_flags_in_patterns() -> None:
    schema = _obj(k={"type": "string", "pattern": "^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$"})
    assert _errors(schema, {"k": "Job"}) == []
    assert len(_errors(schema, {"k": "-x"})) == 1


def test_formats() -> None:
    schema = _obj(
        t={"type": "string", "format": "date-time"},
        d={"type": "string", "format": "date"},
        u={"type": "string", "format": "uuid"},
        b={"type": "string", "format": "byte"},
        i={"type": "integer", "format": "int32"},
        j={"type": "integer", "format": "int64"},
        other={"type": "string", "format": "not-checked"},
    )
    good = {
        "t": "2026-11-21T19:00:00Z",
        "d": "2026-11-21",
        "u": "0b5e5a8e-7c1c-4b5b-9a7e-1b2c3d4e5f60",
        "b": "aGVsbG8=",
        "i": 2**40,
        "j": 5,
        "other": "x",
    }
    assert _errors(schema, good) == []
    assert _errors(schema, {"t": "yesterday", "i": "1"}) == [
        (
            "t",
            "FieldValueTypeInvalid",
            'Invalid value: "yesterday": t in body must be of type date-time: "yesterday"',
        ),
        (
            "i",
            "FieldValueTypeInvalid",
            'Invalid value: "string": i in body must be of type integer: "string"',
        ),
    ]
    assert [e[0] for e in _errors(schema, {"d": "21/11/2026", "u": "nope", "b": "!!"})] == [
        "d",
        "u",
        "b",
    ]


def test_array_constraints_and_item_paths() -> None:
    schema = _obj(
        l={"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
        u={"type": "array", "uniqueItems": True, "items": {"type": "integer"}},
    )
    assert _errors(schema, {"l": ["a", 1, "c"], "u": [1, 1]}) == [
        ("l", "FieldValueTooMany", "Too many: 3: must have at most 2 items"),
        (
            "l[1]",
            "FieldValueTypeInvalid",
            'Invalid value: "integer": l[1] in body must be of type string: "integer"',
        ),
        ("u", "FieldValueInvalid", "Invalid value: [1,1]: u in body shouldn't contain duplicates"),
    ]
    assert _errors(schema, {"l": []}) == [
        ("l", "FieldValueInvalid", "Invalid value: 0: l in body should have at least 1 items")
    ]


def test_list_type_set_and_map_duplicates() -> None:
    schema = _obj(
        s={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        m={
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "port"],
            "items": _obj(name={"type": "string"}, port={"type": "integer"}),
        },
    )
    obj = {
        "s": ["a", "b", "a"],
        "m": [{"name": "x", "port": 1}, {"name": "x", "port": 2}, {"name": "x", "port": 1}],
    }
    assert _errors(schema, obj) == [
        ("s[2]", "FieldValueDuplicate", 'Duplicate value: "a"'),
        ("m[2]", "FieldValueDuplicate", 'Duplicate value: {"name":"x","port":1}'),
    ]


def test_object_property_counts_and_additional_properties() -> None:
    schema = _obj(
        m={"type": "object", "maxProperties": 1, "additionalProperties": {"type": "integer"}}
    )
    assert _errors(schema, {"m": {"a": 1, "b": "x"}}) == [
        ("m", "FieldValueTooMany", "Too many: 2: must have at most 1 item"),
        (
            "m.b",
            "FieldValueTypeInvalid",
            'Invalid value: "string": m.b in body must be of type integer: "string"',
        ),
    ]


def test_junctors() -> None:
    schema = _obj(
        a={"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]},
        o={"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 5}]},
        n={"type": "string", "not": {"enum": ["forbidden"]}},
        all={"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 3}]},
    )
    assert _errors(schema, {"a": 11, "o": 10, "n": "ok", "all": 2}) == []
    errs = _errors(schema, {"a": 5, "o": 3, "n": "forbidden", "all": 4})
    assert (
        "<nil>",
        "FieldValueInvalid",
        'Invalid value: "": "a" must validate at least one schema (anyOf)',
    ) in errs
    assert (
        "<nil>",
        "FieldValueInvalid",
        'Invalid value: "": "o" must validate one and only one schema (oneOf). '
        "Found 2 valid alternatives",
    ) in errs
    assert (
        "<nil>",
        "FieldValueInvalid",
        'Invalid value: "": "n" must not validate the schema (not)',
    ) in errs
    assert (
        "all",
        "FieldValueInvalid",
        "Invalid value: 4: all in body should be less than or equal to 3",
    ) in errs
    assert (
        "<nil>",
        "FieldValueInvalid",
        'Invalid value: "": "all" must validate all the schemas (allOf)',
    ) in errs
    assert all(reason in REASONS for _, reason, _ in errs)


def test_embedded_resources_need_api_version_and_kind() -> None:
    schema = _obj(
        t={
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        }
    )
    assert _errors(schema, {"t": {"apiVersion": "batch/v1", "kind": "Job"}}) == []
    assert _errors(schema, {"t": {}}) == [
        ("t.apiVersion", "FieldValueRequired", "Required value"),
        ("t.kind", "FieldValueRequired", "Required value"),
    ]
    errs = _errors(schema, {"t": {"apiVersion": "a/b/c", "kind": "Bad_Kind"}})
    assert [(f, r) for f, r, _ in errs] == [
        ("t.apiVersion", "FieldValueInvalid"),
        ("t.kind", "FieldValueInvalid"),
    ]


def test_valid_cluster_queue_from_project_crd_has_no_errors() -> None:
    s = _crd_schema("ClusterQueue")
    cq = s.default(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": 9}]}
                        ],
                    }
                ],
            },
        }
    )
    assert s.validate(cq) == []
    bad = copy.deepcopy(cq)
    bad["spec"]["queueingStrategy"] = "Random"
    assert [e.reason for e in s.validate(bad)] == ["FieldValueNotSupported"]


def test_cel_rules_are_counted_not_evaluated() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.a == self.b"}],
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "false"}, {"rule": "false"}],
                "properties": {
                    "l": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "x-kubernetes-validations": [{"rule": "false"}],
                        },
                    }
                },
            }
        },
    }
    s = Schema.from_openapi(schema)
    assert s.cel_rules == 4
    assert s.validate({"spec": {"l": [{}]}}) == []


def test_field_error_string_form() -> None:
    err = FieldError("spec.x", "FieldValueRequired", "Required value")
    assert str(err) == "spec.x: Required value"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ('a"b', '"a\\"b"'),
        (1, "1"),
        (2.5, "2.5"),
        (100.0, "100"),
        (1e21, "1e+21"),
        (True, "true"),
        ({"b": 1, "a": [1]}, '{"a":[1],"b":1}'),
    ],
)
def test_values_print_like_go(value: Any, text: str) -> None:
    assert format_value(value) == text


# --- structural checks --------------------------------------------------------------------

P = "spec.versions[0].schema.openAPIV3Schema"


def _structural(schema: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e.field, e.reason, e.message) for e in structural_errors(schema, P)]


def test_every_project_crd_is_structural() -> None:
    for crd in builtin_crds():
        for i, version in enumerate(crd["spec"]["versions"]):
            path = f"spec.versions[{i}].schema.openAPIV3Schema"
            assert structural_errors(version["schema"]["openAPIV3Schema"], path) == [], crd[
                "metadata"
            ]["name"]


def test_missing_types_are_reported_with_crd_paths_sorted_like_upstream() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"properties": {"l": {"type": "array", "items": {}}, "n": {"type": "array"}}}
        },
    }
    assert _structural(schema) == [
        (
            f"{P}.properties[spec].properties[l].items.type",
            "FieldValueRequired",
            "Required value: must not be empty for specified array items",
        ),
        (
            f"{P}.properties[spec].properties[n].items",
            "FieldValueRequired",
            "Required value: must be specified",
        ),
        (
            f"{P}.properties[spec].type",
            "FieldValueRequired",
            "Required value: must not be empty for specified object fields",
        ),
    ]


def test_root_must_be_an_object() -> None:
    assert _structural({}) == [
        (f"{P}.type", "FieldValueRequired", "Required value: must not be empty at the root")
    ]
    assert _structural({"type": "string"}) == [
        (f"{P}.type", "FieldValueInvalid", 'Invalid value: "string": must be object at the root')
    ]


def test_junctors_must_not_carry_types_or_defaults() -> None:
    schema = _obj(
        a={
            "type": "string",
            "anyOf": [{"type": "string", "default": "x"}],
            "oneOf": [{"nullable": True}],
        }
    )
    assert _structural(schema) == [
        (
            f"{P}.properties[a].anyOf[0].default",
            "FieldValueForbidden",
            "Forbidden: must be undefined to be structural",
        ),
        (
            f"{P}.properties[a].anyOf[0].type",
            "FieldValueForbidden",
            "Forbidden: must be empty to be structural",
        ),
        (
            f"{P}.properties[a].oneOf[0].nullable",
            "FieldValueForbidden",
            "Forbidden: must be false to be structural",
        ),
    ]


def test_cel_rules_are_allowed_under_all_of_only() -> None:
    rule = {"x-kubernetes-validations": [{"rule": "self > 0"}]}
    assert _structural(_obj(a={"type": "integer", "allOf": [rule]})) == []
    assert [e[0] for e in _structural(_obj(a={"type": "integer", "anyOf": [rule]}))] == [
        f"{P}.properties[a].anyOf[0].x-kubernetes-validations"
    ]


def test_preserve_unknown_and_int_or_string_nodes_need_no_type() -> None:
    assert (
        _structural(
            _obj(
                a={"x-kubernetes-preserve-unknown-fields": True},
                b={"x-kubernetes-int-or-string": True},
            )
        )
        == []
    )


def test_other_structural_rules() -> None:
    schema = {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "properties": {
            "metadata": _obj(labels={"type": "object"}),
            "kind": {"type": "integer"},
            "m": {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            },
            "ok": {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": True,
            },
            "p": {"type": "string", "pattern": "(unclosed"},
            "l": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "map"},
            "k": {
                "type": "array",
                "items": {"type": "string"},
                "x-kubernetes-list-map-keys": ["a"],
            },
            "lm": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "missing", "name"],
                "items": _obj(name={"type": "object"}),
            },
            "mt": {"type": "string", "x-kubernetes-map-type": "fancy"},
            "lt": {"type": "object", "x-kubernetes-list-type": "set"},
            "t": {"type": "strng"},
            "nul": {"type": "null"},
            "u": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "ref": {"type": "object", "$ref": "#/definitions/x"},
            "pu": {"type": "object", "x-kubernetes-preserve-unknown-fields": False},
            "e": {"type": "object", "x-kubernetes-embedded-resource": True},
            "both": {
                "x-kubernetes-int-or-string": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
    }
    found = {(e.field, e.message) for e in structural_errors(schema, P)}
    expected_fields = {
        f"{P}.additionalProperties",
        f"{P}.properties[metadata]",
        f"{P}.properties[kind].type",
        f"{P}.properties[m].additionalProperties",
        f"{P}.properties[p].pattern",
        f"{P}.properties[l].x-kubernetes-list-map-keys",
        f"{P}.properties[l].items.type",
        f"{P}.properties[k].x-kubernetes-list-type",
        f"{P}.properties[lm].x-kubernetes-list-map-keys",
        f"{P}.properties[lm].items.properties[name].type",
        f"{P}.properties[mt].type",
        f"{P}.properties[mt].x-kubernetes-map-type",
        f"{P}.properties[lt].type",
        f"{P}.properties[t].type",
        f"{P}.properties[nul].type",
        f"{P}.properties[u].uniqueItems",
        f"{P}.properties[ref].$ref",
        f"{P}.properties[pu].x-kubernetes-preserve-unknown-fields",
        f"{P}.properties[e].properties",
        f"{P}.properties[both].x-kubernetes-preserve-unknown-fields",
    }
    assert {f for f, _ in found} == expected_fields
    assert (
        f"{P}.properties[u].uniqueItems",
        "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes "
        "quadratic",
    ) in found
    assert (
        f"{P}.properties[lm].x-kubernetes-list-map-keys",
        'Invalid value: ["name","missing","name"]: must not contain duplicate entries',
    ) in found


def test_root_level_rules() -> None:
    assert _structural({"type": "object", "nullable": True}) == [
        (f"{P}.nullable", "FieldValueForbidden", "Forbidden: nullable cannot be true at the root")
    ]
    described = {
        "type": "object",
        "properties": {"metadata": {"type": "object", "description": "x"}},
    }
    assert [e[0] for e in _structural(described)] == [f"{P}.properties[metadata]"]
    named = _obj(metadata=_obj(name={"type": "string", "maxLength": 10}))
    assert _structural(named) == []


def test_defaults_must_validate_and_survive_pruning() -> None:
    schema = _obj(
        spec=_obj(
            n={"type": "integer", "default": "x"},
            o={
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "default": {"a": "1", "b": 2},
            },
            e={"type": "string", "enum": ["A"], "default": "A"},
            l={"type": "array", "items": {"type": "string"}, "default": ["a", 1]},
        )
    )
    assert _structural(schema) == [
        (
            f"{P}.properties[spec].properties[l].default.[1]",
            "FieldValueTypeInvalid",
            'Invalid value: "integer": [1] in body must be of type string: "integer"',
        ),
        (
            f"{P}.properties[spec].properties[n].default",
            "FieldValueTypeInvalid",
            'Invalid value: "string":  in body must be of type integer: "string"',
        ),
        (
            f"{P}.properties[spec].properties[o].default",
            "FieldValueInvalid",
            'Invalid value: {"a":"1","b":2}: must not have unknown fields',
        ),
    ]


def test_junctor_properties_must_also_be_specified_outside() -> None:
    schema = _obj(
        spec={
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "oneOf": [{"required": ["a"]}, {"properties": {"b": {}}}],
        }
    )
    assert _structural(schema) == [
        (
            f"{P}.properties[spec].properties[b]",
            "FieldValueRequired",
            f"Required value: because it is defined in {P}.properties[spec].oneOf[1].properties[b]",
        )
    ]


@pytest.mark.parametrize(
    ("pattern", "matches", "rejects"),
    [
        ("^(?i)abc$", "ABC", "abd"),
        ("a((?i)b)c", "aBc", "aBC"),
        (r"^[)(]+\z", "()", "a"),
        ("^[]a]+$", "]a", "b"),
    ],
)
def test_go_regex_translation(pattern: str, matches: str, rejects: str) -> None:
    compiled = compile_go_regex(pattern)
    assert compiled.search(matches)
    assert not compiled.search(rejects)
