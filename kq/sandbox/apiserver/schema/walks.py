"""Defaulting and pruning walks over a value and its ``Schema``.

Each skips the subtrees its node's plan says it cannot change (``_default_noop``,
``_prune_noop``...).
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kq.sandbox.apiserver.schema.node import Schema

_CONTAINERS = (dict, list)

_META_FIELDS = ("apiVersion", "kind", "metadata")


def _default(x: Any, s: Schema, unchanged: Collection[str] = ()) -> None:
    """Drop nulls of non-nullable fields without a default, then apply defaults.

    Upstream runs the two as whole-object passes; doing both per subtree gives the same
    result since subtrees are independent and inserted defaults are only defaulted.
    """
    if isinstance(x, dict):
        _default_object(x, s, unchanged)
    elif isinstance(x, list) and s.items is not None:
        items = s.items
        for i, item in enumerate(x):
            if item is None:
                if not items.nullable:
                    x[i] = copy.deepcopy(items.default_value)
                    _apply_defaults(x[i], items)
            elif not items._default_noop and isinstance(item, _CONTAINERS):
                _default(item, items)


def _default_object(x: dict[str, Any], s: Schema, unchanged: Collection[str]) -> None:
    props, extra = s.properties, s.additional
    nulls: list[str] = []
    for k, v in x.items():
        sub = props.get(k, extra)
        if sub is None or k in unchanged:
            continue
        if v is None:
            if not sub.nullable and not sub.has_default:
                nulls.append(k)
        elif not sub._default_noop and isinstance(v, _CONTAINERS):
            _default(v, sub)
    for k in nulls:
        del x[k]
    for k, prop in s._prop_defaults:
        if k not in x or (x[k] is None and not prop.nullable):
            x[k] = copy.deepcopy(prop.default_value)
            if k not in unchanged:
                _apply_defaults(x[k], prop)
    if extra is not None and extra.has_default and not extra.nullable:
        for k in [k for k, v in x.items() if v is None and k not in props]:
            if k not in unchanged:
                x[k] = copy.deepcopy(extra.default_value)
                _apply_defaults(x[k], extra)


def _apply_defaults(x: Any, s: Schema) -> None:
    """Defaults inside an inserted default value (its nulls are left alone)."""
    if s._defaults_noop:
        return
    if isinstance(x, dict):
        for k, prop in s._prop_defaults:
            if k not in x or _is_non_nullable_null(x[k], prop):
                x[k] = copy.deepcopy(prop.default_value)
        for k in x:
            if k in s.properties:
                _apply_defaults(x[k], s.properties[k])
            elif s.additional is not None:
                if _is_non_nullable_null(x[k], s.additional):
                    x[k] = copy.deepcopy(s.additional.default_value)
                _apply_defaults(x[k], s.additional)
    elif isinstance(x, list) and s.items is not None:
        for i, item in enumerate(x):
            if _is_non_nullable_null(item, s.items):
                x[i] = copy.deepcopy(s.items.default_value)
            _apply_defaults(x[i], s.items)


def _is_non_nullable_null(value: Any, s: Schema) -> bool:
    return value is None and not s.nullable


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(
    x: Any,
    s: Schema | None,
    path: str,
    dropped: list[str],
    *,
    root: bool = False,
    unchanged: Collection[str] = (),
) -> None:
    if s is not None and s.preserve_unknown:
        _skip_prune(x, s, path, dropped, root=root)
    elif isinstance(x, dict):
        if s is None:
            dropped.extend(_join(path, k) for k in x)
            x.clear()
        else:
            _prune_object(x, s, path, dropped, root or s.embedded_resource, unchanged)
    elif isinstance(x, list):
        items = s.items if s is not None else None
        if items is not None and items._prune_noop:
            return
        for i, item in enumerate(x):
            # Scalars have nothing to prune, whatever their schema.
            if isinstance(item, _CONTAINERS):
                _prune(item, items, f"{path}[{i}]", dropped)


def _prune_object(
    x: dict[str, Any],
    s: Schema,
    path: str,
    dropped: list[str],
    embedded: bool,
    unchanged: Collection[str],
) -> None:
    props, extra = s.properties, s.additional
    unknown: list[str] = []
    for k, v in x.items():
        if (embedded and k in _META_FIELDS) or k in unchanged:
            continue
        sub = props.get(k, extra)
        if sub is None:
            unknown.append(k)
        elif not sub._prune_noop and isinstance(v, _CONTAINERS):
            _prune(v, sub, _join(path, k), dropped)
    for k in unknown:
        dropped.append(_join(path, k))
        del x[k]


def _skip_prune(x: Any, s: Schema, path: str, dropped: list[str], *, root: bool) -> None:
    if isinstance(x, dict):
        embedded = root or s.embedded_resource
        for k, v in x.items():
            if embedded and k in _META_FIELDS:
                continue
            sub = s.child(k)
            if sub is not None and not sub._prune_noop and isinstance(v, _CONTAINERS):
                _prune(v, sub, _join(path, k), dropped)
    elif isinstance(x, list) and s.items is not None and not s.items._skip_noop:
        for i, item in enumerate(x):
            if isinstance(item, _CONTAINERS):
                _skip_prune(item, s.items, f"{path}[{i}]", dropped, root=False)
