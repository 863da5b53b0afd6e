"""Round trips that keep every field: what a version cannot hold travels in an annotation.

Converting an object to a version that has no place for some of its fields (a v1beta1
ClusterQueue's ``retryDelayMinutes``, a v1beta2 Workload's ``preemptionGates``) records those
fields in the annotation ``kq.dev/conversion-data`` of the converted object; converting back
puts them in place again and drops the annotation. Upstream Kueue drops such fields; kq keeps
them so a client of either version never loses what it wrote.

The record is the difference between the object and its own round trip, as a list of
``[path, value]`` (set) and ``[path]`` (remove) entries. A client of the other version may have
changed the object meanwhile, so an entry is put back only if that changes nothing the other
version can see: restoring a v1beta1 ``admissionChecks`` list is skipped once a v1beta2 client
has edited the ``admissionChecksStrategy`` it became.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Path = list[str | int]
Entry = list[Any]  # [path] removes, [path, value] sets

ANNOTATION = "kq.dev/conversion-data"


def differences(wanted: Any, got: Any, path: Path | None = None) -> list[Entry]:
    """Entries that turn ``got`` into ``wanted``: per key in maps, per index in lists of the
    same length, the whole value elsewhere."""
    path = path or []
    if wanted == got:
        return []
    if isinstance(wanted, dict) and isinstance(got, dict):
        entries: list[Entry] = []
        for key in wanted:
            if key in got:
                entries.extend(differences(wanted[key], got[key], [*path, key]))
            else:
                entries.append([[*path, key], wanted[key]])
        entries.extend([[*path, key]] for key in got if key not in wanted)
        return entries
    if isinstance(wanted, list) and isinstance(got, list) and len(wanted) == len(got):
        entries = []
        for index, (w, g) in enumerate(zip(wanted, got, strict=True)):
            entries.extend(differences(w, g, [*path, index]))
        return entries
    return [[path, wanted]]


def applied(obj: Obj, entry: Entry) -> Obj | None:
    """A copy of ``obj`` with ``entry`` applied, or None where its path no longer exists."""
    path = entry[0]
    if not isinstance(path, list) or not path:
        return None
    out = dict(obj)
    parent: Any = out
    for step in path[:-1]:
        child = _child(parent, step)
        if child is None:
            if len(entry) < 2 or not isinstance(step, str):
                return None
            child = {}
        child = dict(child) if isinstance(child, dict) else list(child)
        parent[step] = child
        parent = child
    return out if _set_or_remove(parent, path[-1], entry) else None


def _child(parent: Any, step: Any) -> Any:
    if isinstance(parent, dict) and isinstance(step, str):
        child = parent.get(step)
    elif isinstance(parent, list) and isinstance(step, int) and 0 <= step < len(parent):
        child = parent[step]
    else:
        return None
    return child if isinstance(child, dict | list) else None


def _set_or_remove(parent: Any, last: Any, entry: Entry) -> bool:
    if isinstance(parent, dict) and isinstance(last, str):
        if len(entry) >= 2:
            parent[last] = entry[1]
        else:
            parent.pop(last, None)
        return True
    if isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
        if len(entry) < 2:
            return False
        parent[last] = entry[1]
        return True
    return False


def take_record(obj: Obj) -> tuple[Obj, str | None, list[Entry]]:
    """``obj`` without the annotation, the apiVersion its record is for, and the entries."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict) or ANNOTATION not in annotations:
        return obj, None, []
    rest = {k: v for k, v in annotations.items() if k != ANNOTATION}
    new_meta = {k: v for k, v in meta.items() if k != "annotations"}  # type: ignore[union-attr]
    if rest:
        new_meta["annotations"] = rest
    stripped = {**obj, "metadata": new_meta}
    try:
        record = json.loads(annotations[ANNOTATION])
        entries = [e for e in record["fields"] if isinstance(e, list) and 1 <= len(e) <= 2]
        return stripped, str(record["apiVersion"]), entries
    except (ValueError, TypeError, KeyError):
        # A record someone edited into nonsense restores nothing; the object itself converts.
        return stripped, None, []


def with_record(obj: Obj, api_version: str, entries: list[Entry]) -> Obj:
    """``obj`` (not mutated) carrying the annotation that restores ``entries`` in
    ``api_version``."""
    text = json.dumps({"apiVersion": api_version, "fields": entries}, separators=(",", ":"))
    meta = dict(obj.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION: text}
    return {**obj, "metadata": meta}


def restore(base: Obj, entries: list[Entry], seen_from_other: Callable[[Obj], Obj]) -> Obj:
    """``base`` with each entry that leaves ``seen_from_other(base)`` unchanged. An entry may
    only fit once another is in place (a list that overrides a structure), so passes repeat
    while any entry goes in."""
    if not entries:
        return base
    seen = seen_from_other(base)
    pending = list(entries)
    while pending:
        left = []
        for entry in pending:
            candidate = applied(base, entry)
            if candidate is not None and seen_from_other(candidate) == seen:
                base = candidate
            else:
                left.append(entry)
        if len(left) == len(pending):
            break
        pending = left
    return base
