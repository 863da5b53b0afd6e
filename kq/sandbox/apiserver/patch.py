"""JSON merge patch and JSON patch, two of the PATCH body formats a kube-apiserver applies.

Contract (all functions are pure: inputs are never mutated, results are fresh objects,
except that ``merge_patch_sharing`` results share subtrees with its inputs):

* ``json_merge_patch(target, patch)`` — RFC 7386: maps merge recursively, ``null``
  deletes, anything else (lists included) replaces.  ``merge_patch_sharing`` is the same
  without copies: only the maps on the patch's paths are new, the rest is the inputs'.
* ``json_patch(target, operations)`` — RFC 6902 ``add``/``remove``/``replace``/``move``/
  ``copy``/``test`` with ``~0``/``~1`` escapes and ``-`` (append); like upstream's
  json-patch v4, indices may be negative (from the end), signed or zero-padded, and a
  missing ``value`` reads as null.  A body that is not a list of objects is ``PatchError(400)``;
  an operation that cannot apply (failed ``test``, missing path) is ``PatchError(422)``.
* ``strategic_merge_patch`` is in ``strategic``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "PatchError",
    "json_equal",
    "json_merge_patch",
    "json_patch",
    "merge_patch_sharing",
]


class PatchError(ValueError):
    """A patch that cannot be applied; ``code`` is the HTTP status the server answers."""

    def __init__(self, message: str, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: unlike ``==``, ``true`` differs from ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(json_equal, a, b))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


# --- RFC 7386 -------------------------------------------------------------------------


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def json_merge_patch(target: Mapping[str, Any], patch: Any) -> dict[str, Any]:
    """Apply an RFC 7386 merge patch; a patch that is not an object is ``PatchError(400)``."""
    return merge_patch_sharing(copy.deepcopy(dict(target)), copy.deepcopy(patch))


def merge_patch_sharing(target: Mapping[str, Any], patch: Any) -> dict[str, Any]:
    """``json_merge_patch`` without copying its inputs: the result's maps on the patch's
    paths are new, everything else is shared with ``target`` or ``patch``, so a caller
    must copy what it mutates."""
    if not isinstance(patch, dict):
        raise PatchError("merge patch must be a JSON object", 400)
    result: dict[str, Any] = _merge(target, patch)
    return result


# --- RFC 6902 -------------------------------------------------------------------------


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise PatchError(f"path must be a string, got {path!r}")
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f'JSON pointer must be empty or start with a "/": {path!r}')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(token: str, length: int, *, adding: bool) -> int:
    if token == "-" and adding:
        return length
    # Like Go's strconv.Atoi, as upstream: a sign and leading zeros are accepted.
    if not re.fullmatch(r"[-+]?[0-9]+", token):
        raise PatchError(f"value was not a proper array index: {token!r}")
    idx = int(token)
    size = length + 1 if adding else length
    if idx < 0:
        if idx < -size:
            raise PatchError(f"index out of bounds: {idx}")
        idx += size
    if idx >= size:
        raise PatchError(f"index out of bounds: {idx}")
    return idx


def _container(doc: Any, parts: list[str], op: str, path: str) -> Any:
    node = doc
    for token in parts[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node), adding=False)]
        else:
            raise PatchError(f"{op} operation does not apply: doc is missing path: {path!r}")
    if not isinstance(node, dict | list):
        raise PatchError(f"{op} operation does not apply: doc is missing path: {path!r}")
    return node


def _get(doc: Any, path: str, op: str) -> Any:
    node = doc
    for token in _pointer(path):
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node), adding=False)]
        else:
            raise PatchError(f"{op} operation does not apply: doc is missing path: {path!r}")
    return node


def _remove(doc: Any, path: str, op: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise PatchError(f"{op} operation cannot remove the whole document")
    parent = _container(doc, parts, op, path)
    if isinstance(parent, dict):
        if parts[-1] not in parent:
            raise PatchError(f"{op} operation does not apply: doc is missing key: {path!r}")
        return parent.pop(parts[-1])
    return parent.pop(_index(parts[-1], len(parent), adding=False))


def _add(doc: Any, path: str, value: Any, op: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _container(doc, parts, op, path)
    if isinstance(parent, dict):
        parent[parts[-1]] = value
    else:
        parent.insert(_index(parts[-1], len(parent), adding=True), value)
    return doc


def json_patch(target: Mapping[str, Any], operations: Any) -> dict[str, Any]:
    """Apply an RFC 6902 JSON patch (a list of operation objects)."""
    if not isinstance(operations, list) or not all(isinstance(o, dict) for o in operations):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch", 400)
    doc: Any = copy.deepcopy(dict(target))
    for operation in operations:
        op = operation.get("op")
        path = operation.get("path")
        # A missing "value" reads as null, as in upstream's json-patch.
        value = copy.deepcopy(operation.get("value"))
        if op == "add":
            doc = _add(doc, path, value, op)
        elif op == "remove":
            _remove(doc, path, op)
        elif op == "replace":
            if not _pointer(path):
                if not isinstance(value, dict | list):
                    raise PatchError("replace operation value must be object or array")
                doc = value
            else:
                _remove(doc, path, op)
                doc = _add(doc, path, value, op)
        elif op in ("move", "copy"):
            source = operation.get("from")
            if op == "move":
                if (
                    isinstance(source, str)
                    and isinstance(path, str)
                    and (path.startswith(source + "/"))
                ):
                    raise PatchError(f"move operation cannot move {source!r} into its child")
                moved = _remove(doc, source, op)
            else:
                moved = copy.deepcopy(_get(doc, source, op))
            doc = _add(doc, path, moved, op)
        elif op == "test":
            if not json_equal(_get(doc, path, op), value):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {op}")
    if not isinstance(doc, dict):
        raise PatchError("the patched document is not a JSON object")
    return doc
