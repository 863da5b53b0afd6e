"""The shortcuts that make prune, default and validate cheap change none of their results.

What the walks answer is compared with kube-apiserver's answers over HTTP in
tests/apiserver/test_schema_realk8s.py. Here, properties over the shared cases and random
values check what HTTP cannot show: a value the precomputed skip predicates skip is one the
full walk would not touch, and top-level fields named ``unchanged`` (the half of an update
that is the stored object's) are left out of pruning and validation and nothing else.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kq.sandbox.apiserver.schema import FieldError, Schema
from kq.sandbox.apiserver.schema.validate import _scalar_passes, _validate
from kq.sandbox.apiserver.schema.walks import _apply_defaults, _default, _prune
from tests.apiserver_units.schema_cases import CASES, SCHEMAS, SINK, crd_schema

Obj = dict[str, Any]


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
    for raw in [*SCHEMAS.values(), *(crd_schema(kind) for kind in ("ClusterQueue", "LocalQueue"))]
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


def _top(field: str) -> str:
    return field.replace("[", ".").split(".")[0]


def _error_top(error: FieldError) -> str:
    """The top-level field an error is about; junctor summaries name it in their message."""
    quoted = re.search(r'"([^"]*)" must', error.message)
    return _top(quoted.group(1) if error.field == "<nil>" and quoted else error.field)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(CASES)), st.data())
def test_unchanged_fields_are_left_out_and_nothing_else(name: str, data: st.DataObject) -> None:
    kind, obj = CASES[name]
    schema = Schema.from_openapi(SCHEMAS[kind])
    unchanged = frozenset(data.draw(st.sets(st.sampled_from(sorted(obj) or ["spec"]))))
    pruned, dropped = schema.prune(obj)
    kept, kept_dropped = schema.prune_in_place(copy.deepcopy(obj), unchanged)
    assert kept_dropped == [d for d in dropped if _top(d) not in unchanged]
    assert kept == {k: obj[k] if k in unchanged else v for k, v in pruned.items()} | {
        k: obj[k] for k in unchanged if k in obj
    }
    errors = schema.validate(obj)
    assert schema.validate(obj, unchanged) == [e for e in errors if _error_top(e) not in unchanged]
