"""Prune, default and validate keep the exact results of the plain walks they replace.

``EXPECTED`` was recorded with the straightforward implementation (one full walk per pass,
paths built at every node) before the skipping walks replaced it: dropped paths, the
changes defaulting makes (key order included) and the errors (fields, reasons, messages,
order) must stay the same.  The property tests check the precomputed skip predicates that
make the walks cheap: a value they skip is one the full walk would not touch.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kq.crds import builtin_crds
from kq.sandbox.apiserver.schema import Schema
from kq.sandbox.apiserver.schema.validate import _scalar_passes, _validate
from kq.sandbox.apiserver.schema.walks import _apply_defaults, _default, _prune
from tests.apiserver_units.schema_fast_expected import EXPECTED

Obj = dict[str, Any]

_S: Obj = {"type": "string"}
_REF: Obj = {
    "type": "object",
    "properties": {
        k: _S for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")
    },
    "x-kubernetes-map-type": "atomic",
}
_TIME: Obj = {"type": "string", "format": "date-time"}
# core/v1 Event as a structural schema (the fields kq's recorders write).
EVENT: Obj = {
    "type": "object",
    "required": ["metadata", "involvedObject"],
    "properties": {
        "apiVersion": _S,
        "kind": _S,
        "metadata": {"type": "object"},
        "involvedObject": _REF,
        "related": _REF,
        "reason": _S,
        "message": _S,
        "source": {"type": "object", "properties": {"component": _S, "host": _S}},
        "firstTimestamp": _TIME,
        "lastTimestamp": _TIME,
        "eventTime": {**_TIME, "nullable": True},
        "count": {"type": "integer", "format": "int32"},
        "type": {"type": "string", "enum": ["Normal", "Warning"]},
        "series": {
            "type": "object",
            "properties": {"count": {"type": "integer"}, "lastObservedTime": _TIME},
        },
        "reportingComponent": {"type": "string", "default": ""},
    },
}
# Every kind of node the walks treat apart: junctors, defaults in maps and lists, nullable
# fields, embedded resources, preserved subtrees, list-type sets and maps, formats, bounds.
SINK: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"type": "string", "default": "x", "enum": ["x", "y", 1]},
                "n": {
                    "type": "integer",
                    "nullable": True,
                    "default": 3,
                    "maximum": 5,
                    "exclusiveMaximum": True,
                    "minimum": 0,
                    "exclusiveMinimum": True,
                },
                "f": {"type": "number", "multipleOf": 0.5, "maximum": 10},
                "nn": {"type": "string", "nullable": True},
                "m": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "default": {},
                        "properties": {"n": {"type": "integer", "default": 1}, "z": _S},
                    },
                },
                "md": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "default": "d"},
                },
                "l": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "default": {"k": "d"},
                        "properties": {"k": _S, "v": {"type": "integer", "default": 7}},
                    },
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["k"],
                    "maxItems": 3,
                    "minItems": 1,
                },
                "ls": {
                    "type": "array",
                    "items": {"type": "string", "nullable": True},
                    "x-kubernetes-list-type": "set",
                    "uniqueItems": True,
                },
                "d": {
                    "type": "object",
                    "default": {"inner": {}},
                    "properties": {
                        "inner": {
                            "type": "object",
                            "properties": {"x": {"type": "string", "default": "ix"}},
                        }
                    },
                },
                "q": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True,
                    "pattern": "^[0-9]+$",
                },
                "all": {
                    "type": "string",
                    "allOf": [{"maxLength": 3}, {"pattern": "^a"}, {"minLength": 1}],
                },
                "alt": {"type": "string", "anyOf": [{"maxLength": 2}, {"pattern": "^z"}]},
                "one": {
                    "type": "object",
                    "properties": {"p": _S, "q": _S},
                    "oneOf": [{"required": ["p"]}, {"required": ["q"]}],
                },
                "not": {"type": "string", "not": {"enum": ["bad"]}},
                "res": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "apiVersion": _S,
                        "kind": _S,
                        "metadata": {"type": "object"},
                        "spec": {"type": "object", "properties": {"r": _S}},
                    },
                },
                "pres": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "t": {"type": "object", "properties": {"u": _S}},
                        "l": {
                            "type": "array",
                            "items": {"type": "object", "properties": {"w": _S}},
                        },
                    },
                },
                "free": {"type": "object", "additionalProperties": True},
                "fmt": {
                    "type": "object",
                    "properties": {
                        "b": {"type": "string", "format": "byte"},
                        "d": {"type": "string", "format": "date"},
                        "u": {"type": "string", "format": "uuid"},
                    },
                },
                "props": {
                    "type": "object",
                    "maxProperties": 2,
                    "minProperties": 1,
                    "additionalProperties": {"type": "boolean"},
                },
            },
        },
        "status": {
            "type": "object",
            "nullable": True,
            "properties": {"c": {"type": "integer", "nullable": True}},
        },
    },
}


def _crd(kind: str) -> Obj:
    for crd in builtin_crds():
        if crd["spec"]["names"]["kind"] == kind:
            schema: Obj = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(kind)


SCHEMAS: dict[str, Obj] = {"Workload": _crd("Workload"), "Event": EVENT, "Sink": SINK}


def _condition(kind: str) -> Obj:
    return {
        "type": kind,
        "status": "True",
        "reason": "QuotaReserved",
        "message": "Quota reserved in ClusterQueue cq",
        "lastTransitionTime": "2024-05-01T10:00:01Z",
    }


WORKLOAD: Obj = {
    "apiVersion": "kueue.x-k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "w", "namespace": "ns", "managedFields": [{"fieldsV1": {"f:x": None}}]},
    "spec": {
        "queueName": "lq",
        "active": True,
        "priorityClassSource": "",
        "podSets": [
            {
                "name": "main",
                "count": 2,
                "template": {
                    "metadata": {"labels": {"app": "a"}},
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}
                        ]
                    },
                },
            }
        ],
    },
    "status": {
        "conditions": [_condition("QuotaReserved"), _condition("Admitted")],
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": 2}, "count": 2}
            ],
        },
    },
}
EVENT_OBJ: Obj = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "e", "namespace": "ns"},
    "involvedObject": {"kind": "Workload", "name": "w", "namespace": "ns"},
    "reason": "QuotaReserved",
    "message": "Quota reserved",
    "source": {"component": "kueue"},
    "firstTimestamp": "2024-05-01T10:00:01Z",
    "eventTime": None,
    "count": 1,
    "type": "Normal",
    "reportingComponent": "",
}
SINK_OBJ: Obj = {
    "spec": {
        "a": "x",
        "l": [{"k": "a", "v": 1}],
        "q": "5",
        "all": "ab",
        "alt": "ab",
        "one": {"p": "p"},
        "not": "ok",
        "res": {"apiVersion": "v1", "kind": "Pod", "spec": {"r": "r"}},
    },
    "status": None,
}
BASES: dict[str, Obj] = {"Workload": WORKLOAD, "Event": EVENT_OBJ, "Sink": SINK_OBJ}


def _at(obj: Any, path: str) -> tuple[Any, Any]:
    """The container holding ``path`` (dots and ``[i]``) and the last key."""
    keys: list[Any] = [
        int(part) if part.isdigit() else part
        for part in path.replace("[", ".").replace("]", "").split(".")
    ]
    for key in keys[:-1]:
        obj = obj[key]
    return obj, keys[-1]


_DELETE = object()


def _edit(kind: str, edits: dict[str, Any]) -> Obj:
    """The base object of ``kind`` with ``path: value`` edits, in order."""
    obj = copy.deepcopy(BASES[kind])
    for path, value in edits.items():
        parent, key = _at(obj, path)
        if value is _DELETE:
            del parent[key]
        else:
            parent[key] = value
    return obj


D = _DELETE
CASES: dict[str, tuple[str, Obj, frozenset[str]]] = {
    # Workload (kueue CRD)
    "workload-valid": ("Workload", _edit("Workload", {}), frozenset()),
    "workload-unknown-fields": (
        "Workload",
        _edit(
            "Workload",
            {
                "junk": 1,
                "metadata.extra": {"kept": None},
                "spec.foo": {"bar": [1]},
                "spec.podSets[0].extra": "x",
                "spec.podSets[0].template.spec.hostNetwork": True,
                "spec.podSets[0].template.spec.containers[0].args": ["a"],
                "spec.podSets[0].template.metadata.labels.x": {"y": 1},
                "status.admission.bar": None,
                "status.conditions[1].extra": [{"a": 1}],
            },
        ),
        frozenset(),
    ),
    "workload-nulls": (
        "Workload",
        _edit(
            "Workload",
            {
                "spec.priority": None,
                "spec.active": None,
                "spec.podSets[0].count": None,
                "spec.podSets[0].name": None,
                "spec.podSets[0].template.metadata.labels.app": None,
                "status.conditions": None,
                "status.admission.podSetAssignments[0].flavors.cpu": None,
            },
        ),
        frozenset(),
    ),
    "workload-missing-defaults": (
        "Workload",
        _edit(
            "Workload",
            {
                "spec.active": D,
                "spec.priorityClassSource": D,
                "spec.podSets": [{"template": {}}, {"name": "w", "count": 3, "template": {}}],
            },
        ),
        frozenset(),
    ),
    "workload-violations": (
        "Workload",
        _edit(
            "Workload",
            {
                "spec.queueName": "Bad_Name",
                "spec.priorityClassName": "x" * 254,
                "spec.priorityClassSource": "other",
                "spec.maximumExecutionTimeSeconds": 0,
                "spec.podSets[0].count": -1,
                "spec.podSets[0].minCount": 1.5,
                "spec.podSets[0].template.spec.containers[0].resources.requests.cpu": "1x",
                "status.conditions[0].status": "Maybe",
                "status.conditions[0].reason": "",
                "status.conditions[1].type": "QuotaReserved",
                "status.conditions[1].lastTransitionTime": "yesterday",
                "status.admission.clusterQueue": D,
                "status.admission.podSetAssignments[0].resourceUsage.cpu": [1],
            },
        ),
        frozenset(),
    ),
    "workload-wrong-types": (
        "Workload",
        _edit(
            "Workload",
            {
                "spec.active": "yes",
                "spec.priority": 2.0,
                "spec.podSets[0].count": "3",
                "spec.podSets[0].template": [],
                "status.conditions": {"type": "Admitted"},
                "status.admission.podSetAssignments": [None, 7, {"name": "main"}],
            },
        ),
        frozenset(),
    ),
    "workload-list-bounds-and-duplicates": (
        "Workload",
        _edit(
            "Workload",
            {
                "spec.podSets": [
                    {"name": f"p{i % 17}", "count": 1, "template": {}} for i in range(19)
                ],
                "status.admission.podSetAssignments[0].name": D,
            },
        ),
        frozenset(),
    ),
    "workload-empty-pod-sets": ("Workload", _edit("Workload", {"spec.podSets": []}), frozenset()),
    "workload-required": ("Workload", _edit("Workload", {"spec.podSets": D}), frozenset()),
    "workload-unchanged-status": (
        "Workload",
        _edit(
            "Workload",
            {
                "status.junk": 1,
                "status.conditions[0].status": None,
                "status.conditions[1].type": "QuotaReserved",
                "spec.active": D,
                "spec.podSets[0].count": None,
            },
        ),
        frozenset({"status"}),
    ),
    "workload-unchanged-spec": (
        "Workload",
        _edit("Workload", {"spec.active": D, "spec.junk": 1, "status.junk": 2}),
        frozenset({"spec", "metadata"}),
    ),
    # core/v1 Event
    "event-valid": ("Event", _edit("Event", {}), frozenset()),
    "event-unknown-fields-and-nulls": (
        "Event",
        _edit(
            "Event",
            {
                "involvedObject.junk": 1,
                "source.host": None,
                "message": None,
                "reportingComponent": None,
                "eventTime": None,
                "series": {"count": None, "extra": 1},
            },
        ),
        frozenset(),
    ),
    "event-violations": (
        "Event",
        _edit(
            "Event",
            {
                "involvedObject": D,
                "count": "1",
                "type": "Fatal",
                "firstTimestamp": "2024-13",
                "source": "kueue",
                "series": {"count": 1.5, "lastObservedTime": 5},
            },
        ),
        frozenset(),
    ),
    "event-missing-default": (
        "Event",
        _edit("Event", {"reportingComponent": D, "metadata": None}),
        frozenset(),
    ),
    # Every node kind
    "sink-valid": ("Sink", _edit("Sink", {}), frozenset()),
    "sink-defaults": (
        "Sink",
        _edit(
            "Sink",
            {
                "spec.a": D,
                "spec.n": None,
                "spec.m": {"x": None, "y": {"z": "z"}, "w": {"n": None}},
                "spec.md": {"a": None, "b": "b"},
                "spec.l": [None, {"k": "b"}, {"k": "c", "v": None}],
                "spec.ls": [None, "a"],
                "spec.d": None,
            },
        ),
        frozenset(),
    ),
    "sink-pruning": (
        "Sink",
        _edit(
            "Sink",
            {
                "spec.res.junk": 1,
                "spec.res.metadata": {"name": "n", "anything": {"x": 1}},
                "spec.res.spec.junk": 2,
                "spec.pres": {
                    "anything": {"deep": [1]},
                    "t": {"u": "u", "v": "v"},
                    "l": [{"w": "w", "x": "x"}, 3],
                },
                "spec.free": {"a": {"b": [None]}},
                "spec.one.r": 1,
                "spec.l[0].junk": None,
                "spec.ls": [["nested"], {"a": 1}],
            },
        ),
        frozenset(),
    ),
    "sink-junctors": (
        "Sink",
        _edit(
            "Sink",
            {
                "spec.q": "5Gi",
                "spec.all": "bcdef",
                "spec.alt": "zzzz",
                "spec.one": {"p": "p", "q": "q"},
                "spec.not": "bad",
            },
        ),
        frozenset(),
    ),
    "sink-junctors-none-valid": (
        "Sink",
        _edit(
            "Sink",
            {"spec.q": True, "spec.all": "", "spec.alt": "long", "spec.one": {}, "spec.not": 1},
        ),
        frozenset(),
    ),
    "sink-bounds-and-formats": (
        "Sink",
        _edit(
            "Sink",
            {
                "spec.n": 5,
                "spec.f": 1.25,
                "spec.a": 1.0,
                "spec.l": [{"k": "a"}, {"k": "a"}, {"k": "b"}, {"v": 1}],
                "spec.ls": ["a", "b", "a", None, None],
                "spec.fmt": {"b": "not base64!", "d": "2024-1-1", "u": "nope"},
                "spec.props": {"a": True, "b": False, "c": "x"},
                "spec.res": {"apiVersion": "a/b/c", "kind": "Bad Kind!"},
            },
        ),
        frozenset(),
    ),
    "sink-more-bounds": (
        "Sink",
        _edit(
            "Sink",
            {
                "spec.n": 0,
                "spec.f": 11,
                "spec.a": "z",
                "spec.l": [],
                "spec.props": {},
                "spec.res": {"apiVersion": 1, "kind": ""},
                "status": {"c": None},
            },
        ),
        frozenset(),
    ),
    "sink-root-types": ("Sink", _edit("Sink", {"spec": [], "status": "s"}), frozenset()),
}


def _join(path: str, key: object) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)


def _changes(before: Any, after: Any, path: str = "") -> list[Any]:
    """What turned ``before`` into ``after``: a map's new key order, new values, new values of
    kept keys; JSON text compares values, so ``1``, ``1.0`` and ``True`` differ."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[Any] = []
        if list(before) != list(after):
            out.append([f"{path}{{}}", list(after)])
        for k, v in after.items():
            out += _changes(before[k], v, _join(path, k)) if k in before else [[_join(path, k), v]]
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            c
            for i, (b, a) in enumerate(zip(before, after, strict=True))
            for c in _changes(b, a, _join(path, i))
        ]
    return [] if json.dumps(before) == json.dumps(after) else [[path, after]]


def _outcome(schema: Schema, obj: Obj, unchanged: frozenset[str]) -> Obj:
    """Prune, default and validate as the API server runs them, recording each step."""
    before = copy.deepcopy(obj)
    pruned, dropped = schema.prune_in_place(obj, unchanged)
    after_prune = copy.deepcopy(pruned)
    defaulted = schema.default_in_place(pruned, unchanged)
    errors = schema.validate(defaulted, unchanged)
    return {
        "dropped": dropped,
        "pruned": _changes(before, after_prune),
        "defaulted": _changes(after_prune, defaulted),
        "errors": [[e.field, e.reason, e.message] for e in errors],
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_prune_default_validate_keep_the_recorded_results(name: str) -> None:
    kind, obj, unchanged = CASES[name]
    schema = Schema.from_openapi(SCHEMAS[kind])
    assert _outcome(schema, copy.deepcopy(obj), unchanged) == EXPECTED[name]


def test_copying_variants_match_the_in_place_ones() -> None:
    schema = Schema.from_openapi(SINK)
    obj = CASES["sink-pruning"][1]
    pruned, dropped = schema.prune(obj)
    assert (pruned, dropped) == schema.prune_in_place(copy.deepcopy(obj))
    assert schema.default(pruned) == schema.default_in_place(copy.deepcopy(pruned))
    assert obj == CASES["sink-pruning"][1]


def _nodes(s: Schema) -> Iterator[Schema]:
    yield s
    kids = (*s.properties.values(), s.items, s.additional, s.not_)
    for kid in (*kids, *s.all_of, *s.any_of, *s.one_of):
        if kid is not None:
            yield from _nodes(kid)


NODES = [
    node
    for raw in [*SCHEMAS.values(), *(_crd(kind) for kind in ("ClusterQueue", "LocalQueue"))]
    for node in _nodes(Schema.from_openapi(raw))
]
_KEYS = st.sampled_from(["name", "count", "type", "k", "v", "spec", "metadata", "x", "l"])
_STRINGS = st.sampled_from(
    ["", "a", "main", "1", "5Gi", "Bad_Name", "True", "x" * 70, "2024-05-01T10:00:01Z", "dGVzdA=="]
)
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 20), st.sampled_from([1.0, 1.5, -0.5]), _STRINGS
)
VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)


def _unchanged_by(walk: Callable[[Any], object], value: Any) -> bool:
    copied = copy.deepcopy(value)
    walk(copied)
    return json.dumps(copied) == json.dumps(value)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(NODES), VALUES)
def test_values_the_walks_skip_are_ones_they_would_not_touch(node: Schema, value: Any) -> None:
    t = type(value)
    if t in node._fast or (t in node._quick and _scalar_passes(value, node)):
        errs: list[Any] = []
        dups: list[Any] = []
        _validate(value, node, "x", errs, dups)
        assert errs == dups == []
    if node._prune_noop:
        dropped: list[str] = []
        assert _unchanged_by(lambda v: _prune(v, node, "x", dropped), value)
        assert dropped == []
    if node._default_noop:
        assert _unchanged_by(lambda v: _default(v, node), value)
    if node._defaults_noop:
        assert _unchanged_by(lambda v: _apply_defaults(v, node), value)
