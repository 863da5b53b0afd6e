"""Field sets of server-side apply: which fields of an object a manager owns.

* Ownership uses the real FieldsV1 encoding: ``f:<field>``, ``k:{"key":"value"}`` for
  list-map items, ``v:<json>`` for set items, and ``.`` for a node with children that is
  itself owned.  As in structured-merge-diff, an apply owns leaves, list items and
  entries of granular maps; an update also owns the maps and lists it created.
* List and map types come from a ``TypeLookup``: ``schema_types(schema)`` for CRDs, which
  honours ``x-kubernetes-list-type``/``-list-map-keys``/``-map-type``, or
  ``builtin_types(kind)`` from the built-in strategic-merge table (merge lists with a merge
  key are list maps, without one sets; labels/annotations/... are granular maps).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kq.sandbox.apiserver._strategy import TypeStrategy, kind_strategy, lookup
from kq.sandbox.apiserver.patch import json_equal
from kq.sandbox.apiserver.schema import Schema

Path = tuple[str, ...]
"""A field path as FieldsV1 keys, e.g. ``("f:spec", 'k:{"name":"c"}', "f:image")``."""


@dataclass(frozen=True)
class NodeType:
    """How a node merges: list type (``atomic``/``set``/``map`` with ``keys``), and for maps
    whether they are granular (keys are entries owned separately, like labels) or atomic
    (replaced and owned whole); other maps are structs."""

    list_type: Literal["atomic", "set", "map"] = "atomic"
    keys: tuple[str, ...] = ()
    granular_map: bool = False
    atomic_map: bool = False


TypeLookup = Callable[[tuple[str, ...]], NodeType]
"""Type of the node at a path of field names (list items and map keys are not elided:
a map key is a name; list items add nothing), e.g. ``("spec", "containers", "ports")``."""

_STRUCT = NodeType()
_GRANULAR_MAPS = frozenset(
    {
        "labels",
        "annotations",
        "data",
        "binaryData",
        "stringData",
        "nodeSelector",
        "limits",
        "requests",
        "matchLabels",
        "capacity",
        "allocatable",
    }
)


def builtin_types(kind: str) -> TypeLookup:
    """Types from the strategic-merge table for ``kind`` (``"/v1/Pod"`` format)."""
    root = kind_strategy(kind)

    def resolve(names: tuple[str, ...]) -> NodeType:
        t: TypeStrategy | None = root
        fs = None
        for name in names:
            fs = lookup(t, name)
            t = fs.type
        if fs is not None and fs.strategy == "merge":
            return NodeType("map", (fs.merge_key,)) if fs.merge_key else NodeType("set")
        if names and names[-1] in _GRANULAR_MAPS:
            return NodeType(granular_map=True)
        return _STRUCT

    return resolve


def schema_types(schema: Schema) -> TypeLookup:
    """Types from a CRD structural schema."""

    def resolve(names: tuple[str, ...]) -> NodeType:
        node: Schema | None = schema
        for name in names:
            if node is None:
                return _STRUCT
            if node.type == "array" and node.items is not None:
                node = node.items
            node = node.child(name)
        if node is None:
            return _STRUCT
        if node.type == "array":
            if node.list_type == "map" and node.list_map_keys:
                return NodeType("map", node.list_map_keys)
            if node.list_type == "set":
                return NodeType("set")
            return _STRUCT
        if node.raw.get("x-kubernetes-map-type") == "atomic":
            return NodeType(atomic_map=True)
        if node.additional is not None and not node.properties:
            return NodeType(granular_map=True)
        return _STRUCT

    return resolve


# --- field sets ---------------------------------------------------------------------------

# Metadata the server owns; never part of any manager's set.
_SERVER_META = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
        "generateName",
    }
)


def item_key(item: Any, keys: tuple[str, ...]) -> str | None:
    if not isinstance(item, dict) or not all(k in item for k in keys):
        return None
    return "k:" + json.dumps({k: item[k] for k in keys}, sort_keys=True, separators=(",", ":"))


def _value_key(value: Any) -> str:
    return "v:" + json.dumps(value, sort_keys=True, separators=(",", ":"))


def list_type_of(value: list[Any], nt: NodeType) -> NodeType:
    """``nt`` unless its keys are missing from some item (then the list is atomic)."""
    if nt.list_type == "map" and any(item_key(i, nt.keys) is None for i in value):
        return _STRUCT
    if nt.list_type == "set" and any(isinstance(i, dict | list) for i in value):
        return _STRUCT
    return nt


@dataclass(frozen=True)
class _Node:
    """One node of an object: ``member`` when an applier owns it by applying it, ``leaf``
    when its value is compared whole (scalars, atomic lists and maps, set items)."""

    value: Any
    member: bool
    leaf: bool


def _nodes(obj: Mapping[str, Any], types: TypeLookup) -> dict[Path, _Node]:
    """Every node of ``obj`` by path, without ``apiVersion``, ``kind`` and server metadata."""
    out: dict[Path, _Node] = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        if key == "metadata" and isinstance(value, dict):
            meta = {k: v for k, v in value.items() if k not in _SERVER_META}
            _walk_map(meta, ("f:metadata",), ("metadata",), types, out, entries=False)
            continue
        _walk(value, (f"f:{key}",), (key,), types, out, member=False)
    return out


def _walk(
    value: Any,
    path: Path,
    names: tuple[str, ...],
    types: TypeLookup,
    out: dict[Path, _Node],
    *,
    member: bool,
) -> None:
    if isinstance(value, dict):
        nt = types(names)
        if nt.atomic_map or not value:
            out[path] = _Node(value, True, True)
            return
        out[path] = _Node(value, member, False)
        _walk_map(value, path, names, types, out, entries=nt.granular_map)
    elif isinstance(value, list):
        nt = list_type_of(value, types(names))
        if nt.list_type == "atomic":
            out[path] = _Node(value, True, True)
            return
        out[path] = _Node(value, False, False)
        for item in value:
            if nt.list_type == "set":
                out[(*path, _value_key(item))] = _Node(item, True, True)
                continue
            key = item_key(item, nt.keys)
            assert key is not None
            out[(*path, key)] = _Node(item, True, False)
            _walk_map(item, (*path, key), names, types, out, entries=False)
    else:
        out[path] = _Node(value, True, True)


def _walk_map(
    value: Mapping[str, Any],
    path: Path,
    names: tuple[str, ...],
    types: TypeLookup,
    out: dict[Path, _Node],
    *,
    entries: bool,
) -> None:
    # Entries of a granular map are members themselves; fields of a struct are not.
    for key, child in value.items():
        _walk(child, (*path, f"f:{key}"), (*names, key), types, out, member=entries)


def field_set(obj: Mapping[str, Any], types: TypeLookup) -> set[Path]:
    """The paths an applier of ``obj`` owns: leaves, list items, granular-map entries."""
    return {p for p, node in _nodes(obj, types).items() if node.member}


def changes(
    before: Mapping[str, Any], after: Mapping[str, Any], types: TypeLookup
) -> tuple[set[Path], set[Path]]:
    """``(added or modified, removed)`` paths between two objects (containers included)."""
    old, new = _nodes(before, types), _nodes(after, types)
    touched = {
        p
        for p, node in new.items()
        if p not in old or (node.leaf and not json_equal(old[p].value, node.value))
    }
    return touched, set(old) - set(new)


def encode_fields(paths: Iterable[Path]) -> dict[str, Any]:
    """FieldsV1 JSON of a set of paths."""
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for element in path:
            node = node.setdefault(element, {})
        if node is not root:
            node.setdefault(".", {})
    return _drop_leaf_dots(root)


def _drop_leaf_dots(node: dict[str, Any]) -> dict[str, Any]:
    # A leaf is owned by being present; "." is only written for nodes with children.
    out: dict[str, Any] = {}
    for key, child in node.items():
        if key == ".":
            continue
        inner = _drop_leaf_dots(child)
        if inner and "." in child:
            inner = {".": {}, **inner}
        out[key] = inner
    return out


def decode_fields(fields: Mapping[str, Any]) -> set[Path]:
    """Paths of a FieldsV1 JSON object."""
    out: set[Path] = set()

    def visit(node: Mapping[str, Any], path: Path) -> None:
        children = [k for k in node if k != "."]
        if path and ("." in node or not children):
            out.add(path)
        for key in children:
            visit(node[key], (*path, key))

    visit(fields, ())
    return out


def path_string(path: Path) -> str:
    """A path as apiserver conflict messages print it: ``.spec.containers[name="c"].image``."""
    parts: list[str] = []
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            parts.append("." + rest)
        elif kind == "k":
            keys = json.loads(rest)
            parts.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]")
        else:
            parts.append(f"[={rest}]")
    return "".join(parts)
