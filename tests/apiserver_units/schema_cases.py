"""Objects and schemas the schema tests share: three schemas and cases that reach every branch.

``SCHEMAS`` are the Workload CRD's, a structural rendering of core/v1 Event and ``SINK``, a
synthetic schema with every kind of node the walks treat apart. ``CASES`` are edits of a valid
base object of each kind: unknown fields, nulls, missing defaults, violations, wrong types.
"""

from __future__ import annotations

import copy
from typing import Any

from kq.crds import builtin_crds

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
                        "required": ["k"],
                        "properties": {"k": _S, "v": {"type": "integer", "default": 7}},
                    },
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["k"],
                    "maxItems": 3,
                    "minItems": 1,
                },
                "ls": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                    "uniqueItems": True,
                },
                "ln": {"type": "array", "items": {"type": "string", "nullable": True}},
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


def crd_schema(kind: str) -> Obj:
    """The openAPIV3Schema of a kq CRD's first version."""
    for crd in builtin_crds():
        if crd["spec"]["names"]["kind"] == kind:
            schema: Obj = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(kind)


SCHEMAS: dict[str, Obj] = {"Workload": crd_schema("Workload"), "Event": EVENT, "Sink": SINK}


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
CASES: dict[str, tuple[str, Obj]] = {
    # Workload (kueue CRD)
    "workload-valid": ("Workload", _edit("Workload", {})),
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
    ),
    "workload-empty-pod-sets": ("Workload", _edit("Workload", {"spec.podSets": []})),
    "workload-required": ("Workload", _edit("Workload", {"spec.podSets": D})),
    "workload-status-and-spec-edits": (
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
    ),
    "workload-junk-in-spec-and-status": (
        "Workload",
        _edit("Workload", {"spec.active": D, "spec.junk": 1, "status.junk": 2}),
    ),
    # core/v1 Event
    "event-valid": ("Event", _edit("Event", {})),
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
    ),
    "event-missing-default": (
        "Event",
        _edit("Event", {"reportingComponent": D, "metadata": None}),
    ),
    # Every node kind
    "sink-valid": ("Sink", _edit("Sink", {})),
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
                "spec.ln": [None, "a"],
                "spec.d": None,
            },
        ),
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
    ),
    "sink-junctors-none-valid": (
        "Sink",
        _edit(
            "Sink",
            {"spec.q": True, "spec.all": "", "spec.alt": "long", "spec.one": {}, "spec.not": 1},
        ),
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
    ),
    "sink-root-types": ("Sink", _edit("Sink", {"spec": [], "status": "s"})),
}
