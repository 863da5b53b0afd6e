"""Hypothesis strategies for objects valid under a CRD version's OpenAPI schema.

Small on purpose: lists hold at most two items, optional fields appear only down to a depth,
strings come from a few names that fit the field's pattern. Objects come out defaulted by the
schema, as the API server stores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from kq.sandbox.apiserver.schema import Schema, compile_go_regex

NAMES = ("a", "b1", "c-d", "e.f", "Ready", "x" * 63, "main", "node-1-a", "z9")
TIMES = ("2025-01-02T03:04:05Z", "2026-06-30T23:59:59Z")
QUANTITIES = (0, 1, 3, "500m", "2", "1Gi", "10")
OPTIONAL_DEPTH = 4
MAX_ITEMS = 2


def _strings(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    if schema.get("format") == "date-time":
        return st.sampled_from(TIMES)
    low, high = schema.get("minLength", 0), schema.get("maxLength", 1 << 30)
    pattern = schema.get("pattern")
    regex = compile_go_regex(pattern) if pattern else None
    fits = [n for n in NAMES if low <= len(n) <= high and (regex is None or regex.search(n))]
    if not fits:
        raise ValueError(f"no sample name fits {dict(schema)}")
    return st.sampled_from(fits)


def _list(schema: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
    items = values(schema["items"], depth + 1)
    low = schema.get("minItems", 0)
    high = max(min(schema.get("maxItems", MAX_ITEMS), MAX_ITEMS), low)
    keys = schema.get("x-kubernetes-list-map-keys")
    if keys:
        # A missing key counts as its default, as the server sees it once defaulted.
        props = schema["items"].get("properties") or {}
        defaults = {k: (props.get(k) or {}).get("default") for k in keys}
        return st.lists(
            items,
            min_size=low,
            max_size=high,
            unique_by=lambda x: tuple(x.get(k, defaults[k]) for k in keys),
        )
    unique = schema.get("x-kubernetes-list-type") == "set"
    return st.lists(items, min_size=low, max_size=high, unique=unique)


def _object(schema: Mapping[str, Any], depth: int) -> st.SearchStrategy[Any]:
    properties = schema.get("properties") or {}
    if not properties:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            high = min(schema.get("maxProperties", MAX_ITEMS), MAX_ITEMS)
            keys = st.sampled_from(("cpu", "memory", "example.com/gpu", "k"))
            return st.dictionaries(keys, values(extra, depth + 1), max_size=high)
        return st.just({}) | st.just({"kept": {"as": ["given"]}})
    required = set(schema.get("required") or ())
    mandatory = {k: values(v, depth + 1) for k, v in properties.items() if k in required}
    optional = (
        {k: values(v, depth + 1) for k, v in properties.items() if k not in required}
        if depth < OPTIONAL_DEPTH
        else {}
    )
    return st.fixed_dictionaries(mandatory, optional=optional)


def values(schema: Mapping[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values valid under ``schema`` (an openAPIV3Schema node)."""
    if schema.get("x-kubernetes-int-or-string"):
        return st.sampled_from(QUANTITIES)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return _strings(schema)
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum", -3), max_value=40)
    if kind == "number":
        return st.integers(min_value=0, max_value=9).map(float)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return _list(schema, depth)
    return _object(schema, depth)


def _metadata() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"name": st.sampled_from(("one", "two-2"))},
        optional={
            "labels": st.dictionaries(st.sampled_from(("app", "team")), st.just("x"), min_size=1),
            "annotations": st.dictionaries(
                st.sampled_from(("note", "example.com/why")), st.just("y"), min_size=1
            ),
        },
    )


def objects(version: Mapping[str, Any], api_version: str, kind: str) -> st.SearchStrategy[Any]:
    """Whole objects of one CRD version (a ``spec.versions[]`` entry), defaulted."""
    root = version["schema"]["openAPIV3Schema"]
    schema = Schema.from_openapi(root)
    body = {k: v for k, v in root["properties"].items() if k not in ("apiVersion", "kind")}
    body.pop("metadata")
    required = set(root.get("required") or ())
    fields = st.fixed_dictionaries(
        {k: values(v, 1) for k, v in body.items() if k in required},
        optional={k: values(v, 1) for k, v in body.items() if k not in required},
    )

    def build(parts: tuple[dict[str, Any], dict[str, Any]]) -> Any:
        meta, rest = parts
        return schema.default({"apiVersion": api_version, "kind": kind, "metadata": meta, **rest})

    return st.tuples(_metadata(), fields).map(build)
