"""Simplified server-side apply with per-manager field ownership (``metadata.managedFields``).

Contract:

* ``server_side_apply(live, applied, manager, *, force, kind, types=None, now=None)``
  merges the applied configuration into ``live`` (``None`` creates): maps merge, lists
  with list type ``map`` merge by key, ``set`` lists union, other lists and scalars are
  replaced.  Fields ``manager`` applied before and no longer applies are removed unless
  another manager (any operation) still owns them or something below them.  A field that
  another manager owns with a different value is a conflict: ``ApplyConflict`` unless
  ``force``, which moves ownership to ``manager``.  Returns ``ApplyResult(object,
  managed_fields)``; ``object["metadata"]["managedFields"]`` is ``managed_fields``.
* ``record_update(live_before, live_after, manager, operation="Update", ...)`` returns
  the managedFields after a non-apply write (``live_before=None`` for a create):
  ``manager`` takes every field the write added or changed (from whoever owned it;
  updates never conflict), and fields the write removed leave every set.
* Field sets (the FieldsV1 encoding, list and map types) live in ``fieldsets``.  The
  entry's ``time`` only moves when the object or the manager's fields change, so a
  repeated apply is a no-op.  ``apiVersion``, ``kind`` and server-set metadata (``name``, ``uid``,
  ``resourceVersion``, ...) are never owned; ``status`` is tracked like any other field
  (the HTTP handler decides which part of an object a request may write).
* Simplifications: no version conversion of field sets; nulls in the applied
  configuration are ignored; merged list-maps and sets keep the live order and append
  new items; list-map items missing a key field make that list atomic (upstream rejects
  them); conflicts are only raised on leaf values (scalars, atomic lists and maps, set
  items); the built-in table's single merge keys stand in for upstream's list-map keys
  (container ports are keyed by ``containerPort`` alone, not with ``protocol``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kq.sandbox.apiserver.fieldsets import (
    NodeType,
    Path,
    TypeLookup,
    builtin_types,
    changes,
    decode_fields,
    encode_fields,
    field_set,
    item_key,
    list_type_of,
    path_string,
    schema_types,
)
from kq.sandbox.apiserver.patch import json_equal

__all__ = [
    "ApplyConflict",
    "ApplyResult",
    "NodeType",
    "Path",
    "TypeLookup",
    "builtin_types",
    "decode_fields",
    "encode_fields",
    "field_set",
    "path_string",
    "record_update",
    "schema_types",
    "server_side_apply",
]


# --- navigation ---------------------------------------------------------------------------

_MISSING = object()


def _child(container: Any, element: str) -> Any:
    kind, _, rest = element.partition(":")
    if kind == "f":
        return container.get(rest, _MISSING) if isinstance(container, dict) else _MISSING
    if not isinstance(container, list):
        return _MISSING
    if kind == "k":
        want = json.loads(rest)
        for item in container:
            if isinstance(item, dict) and all(
                k in item and json_equal(item[k], v) for k, v in want.items()
            ):
                return item
        return _MISSING
    value = json.loads(rest)
    return value if any(json_equal(i, value) for i in container) else _MISSING


def _get(obj: Any, path: Path) -> Any:
    node = obj
    for element in path:
        node = _child(node, element)
        if node is _MISSING:
            break
    return node


def _remove(obj: Any, path: Path) -> None:
    parent = _get(obj, path[:-1])
    element = path[-1]
    kind, _, rest = element.partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(rest, None)
    elif isinstance(parent, list):
        target = _child(parent, element)
        if target is not _MISSING:
            parent[:] = [i for i in parent if not (i is target or json_equal(i, target))]


# --- merging --------------------------------------------------------------------------------


def _merge(live: Any, applied: Any, names: tuple[str, ...], types: TypeLookup) -> Any:
    if isinstance(live, dict) and isinstance(applied, dict):
        if types(names).atomic_map:
            return copy.deepcopy(applied)
        out = dict(live)
        for key, value in applied.items():
            if value is None:
                continue
            out[key] = _merge(live.get(key, _MISSING), value, (*names, key), types)
        return out
    if isinstance(live, list) and isinstance(applied, list):
        nt = list_type_of(live + applied, types(names))
        if nt.list_type == "map":
            merged = list(live)
            for item in applied:
                key = item_key(item, nt.keys)
                assert key is not None
                for i, existing in enumerate(merged):
                    if item_key(existing, nt.keys) == key:
                        merged[i] = _merge(existing, item, names, types)
                        break
                else:
                    merged.append(copy.deepcopy(item))
            return merged
        if nt.list_type == "set":
            merged = list(live)
            merged.extend(
                copy.deepcopy(v) for v in applied if not any(json_equal(v, m) for m in merged)
            )
            return merged
    return copy.deepcopy(applied)


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


# --- managedFields ------------------------------------------------------------------------


@dataclass
class _Entry:
    manager: str
    operation: str
    api_version: str
    time: str | None
    paths: set[Path]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation}
        out["apiVersion"] = self.api_version
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = encode_fields(self.paths)
        out.update(self.extra)
        return out


_ENTRY_KEYS = frozenset({"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"})


def _entries(obj: Mapping[str, Any] | None) -> list[_Entry]:
    if obj is None:
        return []
    raw = (obj.get("metadata") or {}).get("managedFields") or []
    out: list[_Entry] = []
    for e in raw:
        if not isinstance(e, dict):
            continue
        out.append(
            _Entry(
                manager=str(e.get("manager", "")),
                operation=str(e.get("operation", "Update")),
                api_version=str(e.get("apiVersion", "")),
                time=e.get("time"),
                paths=decode_fields(e.get("fieldsV1") or {}),
                extra={k: v for k, v in e.items() if k not in _ENTRY_KEYS},
            )
        )
    return out


def _now(now: str | None) -> str:
    return now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApplyConflict(Exception):
    """Other managers own applied fields with different values (HTTP 409).

    ``conflicts`` lists ``(manager, path)``; ``causes`` are the Status causes upstream
    sends; the message is upstream's, e.g. ``Apply failed with 1 conflict: conflict with
    "kubectl-edit" using apps/v1: .spec.replicas``.
    """

    def __init__(
        self, conflicts: list[tuple[str, str]], managers: Mapping[str, str] | None = None
    ) -> None:
        self.conflicts = conflicts
        shown = {m: (managers or {}).get(m, json.dumps(m)) for m, _ in conflicts}
        self.causes = [
            {"reason": "FieldManagerConflict", "message": f"conflict with {shown[m]}", "field": p}
            for m, p in conflicts
        ]
        if len(conflicts) == 1:
            manager, path = conflicts[0]
            message = f"Apply failed with 1 conflict: conflict with {shown[manager]}: {path}"
        else:
            lines: list[str] = []
            for manager in sorted(shown):
                lines.append(f"conflicts with {shown[manager]}:")
                lines.extend(f"- {p}" for m, p in conflicts if m == manager)
            message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
        super().__init__(message)


def _describe(entry: _Entry) -> str:
    """A manager as upstream's conflict messages name it."""
    text = json.dumps(entry.manager)
    if entry.extra.get("subresource"):
        text += f" with subresource {json.dumps(entry.extra['subresource'])}"
    if entry.operation == "Update":
        text += f" using {entry.api_version}"
    return text


@dataclass(frozen=True)
class ApplyResult:
    """The object after apply, and its new ``metadata.managedFields``."""

    object: dict[str, Any]
    managed_fields: list[dict[str, Any]]


def _prune_empty(obj: dict[str, Any], path: Path, keep: set[Path], config: Any) -> None:
    """Drop containers the removal of ``path`` left empty, unless owned or still applied."""
    for depth in range(len(path) - 1, 1, -1):
        parent = path[:depth]
        node = _get(obj, parent)
        if node is _MISSING or node or _owned_prefix(parent, keep):
            return
        if _get(config, parent) is not _MISSING:
            return
        _remove(obj, parent)


def _is_key_field(path: Path) -> bool:
    """A list-map item's key field: it goes with its item, never alone."""
    if len(path) < 2 or not path[-2].startswith("k:") or not path[-1].startswith("f:"):
        return False
    return path[-1][2:] in json.loads(path[-2][2:])


def _owned_prefix(path: Path, paths: set[Path]) -> bool:
    return any(p[: len(path)] == path for p in paths)


def server_side_apply(
    live: Mapping[str, Any] | None,
    applied: Mapping[str, Any],
    manager: str,
    *,
    force: bool,
    kind: str,
    types: TypeLookup | None = None,
    now: str | None = None,
) -> ApplyResult:
    """Apply ``applied`` as ``manager`` (see the module docstring)."""
    resolve = types or builtin_types(kind)
    config = _without_managed(_strip_nulls(copy.deepcopy(dict(applied))))
    entries = _entries(live)
    base = _without_managed(copy.deepcopy(dict(live)) if live is not None else {})
    new_set = field_set(config, resolve)
    mine = next((e for e in entries if e.manager == manager and e.operation == "Apply"), None)
    others = [e for e in entries if e is not mine]
    merged: dict[str, Any] = _merge(base, config, (), resolve)
    conflicted = _take_conflicts(others, changes(base, merged, resolve)[0], force=force)
    if mine is not None:
        _drop_unapplied(merged, mine.paths - new_set, new_set, others, config)
    # The timestamp only moves when something changed, so a no-op apply stays a no-op.
    unchanged = mine is not None and mine.paths == new_set and merged == base and not conflicted
    stamp = mine.time if unchanged and mine is not None else _now(now)
    entry = _Entry(manager, "Apply", str(config.get("apiVersion", "")), stamp, new_set)
    managed = [e.to_json() for e in _replace_entry(entries, mine, entry)]
    merged.setdefault("metadata", {})["managedFields"] = managed
    return ApplyResult(merged, copy.deepcopy(managed))


def _without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def _replace_entry(entries: list[_Entry], mine: _Entry | None, entry: _Entry) -> list[_Entry]:
    """``entries`` with ``entry`` in place of ``mine`` (appended when new), less those left
    owning nothing (a forced apply may have taken every field another manager had)."""
    result = [entry if e is mine else e for e in entries if e is mine or e.paths]
    if mine is None:
        result.append(entry)
    return result


def _take_conflicts(others: list[_Entry], touched: set[Path], *, force: bool) -> bool:
    """Like upstream: another manager's field conflicts when this apply adds or changes it.
    Raise ``ApplyConflict`` unless ``force``, which takes the fields; True when any did."""
    conflicts = [(path, e) for e in others for path in sorted(e.paths & touched)]
    if conflicts and not force:
        raise ApplyConflict(
            [(e.manager, path_string(p)) for p, e in conflicts],
            {e.manager: _describe(e) for _, e in conflicts},
        )
    for path, entry in conflicts:
        entry.paths.discard(path)
    return bool(conflicts)


def _drop_unapplied(
    merged: dict[str, Any],
    dropped: set[Path],
    new_set: set[Path],
    others: list[_Entry],
    config: Any,
) -> None:
    """Remove the fields the manager applied before and no longer applies (``dropped``)."""
    keep = new_set.union(*(e.paths for e in others))
    # Parents first: removing a list item takes its fields with it, while fields of
    # items another manager keeps alive are removed one by one.
    for path in sorted(dropped, key=len):
        # Nothing the configuration still contains goes (e.g. an owned empty map that
        # now has content, or a list that is now empty).
        if _owned_prefix(path, keep) or _is_key_field(path) or _get(config, path) is not _MISSING:
            continue
        _remove(merged, path)
        _prune_empty(merged, path, keep, config)


def record_update(
    live_before: Mapping[str, Any] | None,
    live_after: Mapping[str, Any],
    manager: str,
    operation: str = "Update",
    *,
    kind: str = "",
    types: TypeLookup | None = None,
    now: str | None = None,
) -> list[dict[str, Any]]:
    """managedFields after a create/update/patch by ``manager`` (see module docstring)."""
    resolve = types or builtin_types(kind)
    entries = _entries(live_before)
    touched, removed = changes(live_before or {}, live_after, resolve)
    if not touched and not removed:
        return [e.to_json() for e in entries]
    mine = next((e for e in entries if e.manager == manager and e.operation == operation), None)
    for entry in entries:
        if entry is not mine:
            entry.paths -= touched | removed
    if mine is None:
        mine = _Entry(manager, operation, "", None, set())
        entries.append(mine)
    mine.paths = (mine.paths - removed) | touched
    mine.api_version = str(live_after.get("apiVersion", ""))
    mine.time = _now(now)
    return [e.to_json() for e in entries if e.paths]
