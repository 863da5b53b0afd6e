"""Strategic merge patch, as a kube-apiserver applies it to built-in kinds.

* ``strategic_merge_patch(target, patch, kind)`` — strategic merge patch as the server
  applies it.  ``kind`` is ``"<group>/<version>/<Kind>"`` with the core group empty
  (``"/v1/Pod"``, ``"batch/v1/Job"``).  List strategies come from a built-in table of the
  upstream ``patchStrategy``/``patchMergeKey`` tags (see ``_strategy``); lists not in the
  table are replaced and maps merge, so an unknown kind behaves like a merge patch apart
  from ``metadata.finalizers``/``metadata.ownerReferences``.  Directives: ``$patch:
  replace|delete`` on maps, ``$patch: replace|delete`` items in merge lists,
  ``$setElementOrder/<f>``, ``$deleteFromPrimitiveList/<f>``, ``$retainKeys``.  Malformed
  directives are ``PatchError(400)``; merge-key and list-shape failures ``PatchError(422)``.
  Items new to a merge list without ``$setElementOrder`` go first, as upstream.  Unlike
  upstream, a ``$setElementOrder`` list inconsistent with the patch list is not rejected
  (the order list simply wins).  The server never computes patches (kubectl does), so
  there is no diff/three-way code.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kq.sandbox.apiserver._strategy import (
    FieldStrategy,
    TypeStrategy,
    kind_strategy,
    lookup,
)
from kq.sandbox.apiserver.patch import PatchError, json_equal

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_ORDER_PREFIX = "$setElementOrder/"
_DELETE_PREFIX = "$deleteFromPrimitiveList/"


def _strip(value: Any) -> tuple[Any, bool]:
    """Drop directives from a value that is added as-is; False when it must vanish."""
    if isinstance(value, dict):
        if _DIRECTIVE in value:
            return None, False
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == _RETAIN_KEYS or k.startswith((_ORDER_PREFIX, _DELETE_PREFIX)):
                continue
            stripped, keep = _strip(v)
            if keep:
                out[k] = stripped
        return out, True
    if isinstance(value, list):
        items = [_strip(v) for v in value]
        return [v for v, keep in items if keep], True
    return value, True


def _drop_nulls(value: Any) -> Any:
    # A null inside a newly added value has nothing to delete; the server ignores it.
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return "scalar"


def _key_of(item: Any, merge_key: str) -> Any:
    if not isinstance(item, dict):
        raise PatchError(f"expected a map in a list merged by {merge_key!r}, got {item!r}")
    if merge_key not in item:
        raise PatchError(f"map: {item} does not contain declared merge key: {merge_key}")
    return item[merge_key]


def _position(order: list[Any], item: Any, merge_key: str) -> int:
    probe = item.get(merge_key) if merge_key and isinstance(item, dict) else item
    for i, other in enumerate(order):
        value = other.get(merge_key) if merge_key and isinstance(other, dict) else other
        if json_equal(value, probe):
            return i
    return -1


def _sort_by(items: list[Any], order: list[Any], merge_key: str) -> list[Any]:
    known = [i for i in items if _position(order, i, merge_key) >= 0]
    unknown = [i for i in items if _position(order, i, merge_key) < 0]
    known.sort(key=lambda i: _position(order, i, merge_key))
    return known + unknown


def _ordered(
    merged: list[Any], patch_order: list[Any], server_order: list[Any], merge_key: str
) -> list[Any]:
    """Items named by the patch in patch order, interleaved with server-only items by
    their server position (upstream's normalizeElementOrder)."""
    in_patch = [m for m in merged if _position(patch_order, m, merge_key) >= 0]
    server_only = [m for m in merged if _position(patch_order, m, merge_key) < 0]
    left = _sort_by(server_only, server_order, merge_key)
    right = _sort_by(in_patch, patch_order, merge_key)
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            out.append(left[i])
            i += 1
            continue
        if i < len(left):
            li = _position(server_order, left[i], merge_key)
            ri = _position(server_order, right[j], merge_key)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
                continue
        out.append(right[j])
        j += 1
    return out


def _element_kind(*lists: list[Any]) -> str | None:
    kinds = {_kind_of(v) for lst in lists for v in lst}
    if "list" in kinds:
        raise PatchError("lists of lists are not supported")
    if len(kinds) > 1:
        raise PatchError("list element types are not identical")
    return kinds.pop() if kinds else None


def _merge_list(
    original: list[Any], patch: list[Any], fs: FieldStrategy, *, delete: bool = False
) -> list[Any]:
    if not original and not patch:
        return original
    if _element_kind(original, patch) != "map":
        return _merge_primitives(original, patch, delete=delete)
    key = fs.merge_key
    if not key:
        raise PatchError("cannot merge lists without merge key")
    base, plain, replace = _list_directives(original, patch, key)
    if replace:
        return [_strip(p)[0] for p in plain]
    for item in plain:
        _merge_item(base, item, key, fs.type)
    return _ordered(base, patch, original, key)


def _merge_primitives(original: list[Any], patch: list[Any], *, delete: bool) -> list[Any]:
    """A list of scalars merges as a set, or loses the patch's items for
    ``$deleteFromPrimitiveList``."""
    if delete:
        return [v for v in original if not any(json_equal(v, p) for p in patch)]
    merged: list[Any] = []
    for v in original + patch:
        if not any(json_equal(v, m) for m in merged):
            merged.append(v)
    return _ordered(merged, patch, original, "")


def _list_directives(
    original: list[Any], patch: list[Any], key: str
) -> tuple[list[Any], list[Any], bool]:
    """The patch's ``$patch`` items applied: (original less deleted items, the patch's plain
    items, whether a ``replace`` item asks for the plain items alone)."""
    base = list(original)
    plain: list[Any] = []
    replace = False
    for item in patch:
        directive = item.get(_DIRECTIVE)
        if directive is None:
            plain.append(item)
        elif directive == "delete":
            value = _key_of(item, key)
            base = [b for b in base if not json_equal(b.get(key), value)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch", 400)
        else:
            raise PatchError(f"invalid patch type {directive!r} in list item {item}", 400)
    return base, plain, replace


def _merge_item(base: list[Any], item: Any, key: str, t: TypeStrategy | None) -> None:
    """Merge ``item`` into the item of ``base`` with the same merge key, else append it."""
    value = _key_of(item, key)
    for i, b in enumerate(base):
        if isinstance(b, dict) and key in b and json_equal(b[key], value):
            base[i] = _merge_map(b, item, t)
            return
    base.append(_strip(_drop_nulls(item))[0])


def _apply_order(
    original: dict[str, Any], patch: dict[str, Any], name: str, order: Any, t: TypeStrategy | None
) -> None:
    if not isinstance(order, list):
        raise PatchError("invalid patch: $setElementOrder list must be a list", 400)
    fs = lookup(t, name)
    have = original.get(name)
    want = patch.pop(name, None)
    if have is not None and not isinstance(have, list):
        raise PatchError(f"$setElementOrder/{name} applies to a field that is not a list")
    if want is not None and not isinstance(want, list):
        raise PatchError(f"invalid patch: {name} must be a list", 400)
    if have is None and want is None:
        return
    if want is None:
        merged = list(have or [])
    elif have is None:
        merged = _strip(want)[0]
    elif fs.strategy == "merge":
        merged = _merge_list(have, want, fs)
    else:
        merged = _strip(want)[0]
    original[name] = _ordered(merged, order, have or [], fs.merge_key)


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], t: TypeStrategy | None
) -> dict[str, Any]:
    if _DIRECTIVE in patch:
        return _map_directive(patch)
    work = dict(patch)
    result = _retain_keys(dict(original), work)
    for k in [k for k in work if k.startswith(_ORDER_PREFIX)]:
        name = k[len(_ORDER_PREFIX) :]
        if not name:
            raise PatchError("invalid patch: $setElementOrder needs a field name", 400)
        _apply_order(result, work, name, work.pop(k), t)
    # In the patch's order, so that of several malformed fields the first is reported.
    for k, value in work.items():
        _merge_field(result, k, value, t)
    return result


def _map_directive(patch: dict[str, Any]) -> dict[str, Any]:
    """A map with ``$patch``: ``replace`` by the rest of it, or ``delete``."""
    directive = patch[_DIRECTIVE]
    if directive == "replace":
        stripped: dict[str, Any] = _strip({k: v for k, v in patch.items() if k != _DIRECTIVE})[0]
        return stripped
    if directive == "delete":
        return {}
    raise PatchError(f"invalid patch type {directive!r} in map {patch}", 400)


def _retain_keys(result: dict[str, Any], work: dict[str, Any]) -> dict[str, Any]:
    """``result`` with only the keys ``$retainKeys`` (popped from ``work``) lists, if any."""
    if _RETAIN_KEYS not in work:
        return result
    retain = work.pop(_RETAIN_KEYS)
    if not isinstance(retain, list):
        raise PatchError("invalid patch: $retainKeys must be a list", 400)
    for k, v in work.items():
        if v is not None and not k.startswith(("$", _DELETE_PREFIX)) and k not in retain:
            raise PatchError("invalid patch: the patch has a field not listed in $retainKeys", 400)
    return {k: v for k, v in result.items() if k in retain}


def _merge_field(result: dict[str, Any], k: str, value: Any, t: TypeStrategy | None) -> None:
    """Merge the patch's field ``k`` into ``result``."""
    if k.startswith(_DELETE_PREFIX):
        name = k[len(_DELETE_PREFIX) :]
        if not name or not isinstance(value, list):
            raise PatchError("invalid patch: $deleteFromPrimitiveList must be a list", 400)
        if isinstance(result.get(name), list):
            result[name] = _merge_list(result[name], value, lookup(t, name), delete=True)
    elif k.startswith("$"):
        raise PatchError(f"invalid patch: unknown directive {k!r}", 400)
    elif value is None:
        result.pop(k, None)
    elif k not in result or _kind_of(result[k]) != _kind_of(value):
        # A new field, or one whose kind changes, is set as given (less directives and nulls).
        stripped, keep = _strip(_drop_nulls(value))
        if keep:
            result[k] = stripped
        else:
            result.pop(k, None)
    else:
        result[k] = _merge_value(result[k], value, lookup(t, k))


def _merge_value(have: Any, value: Any, fs: FieldStrategy) -> Any:
    """A field present on both sides, of the same kind, merged by its strategy."""
    if isinstance(value, dict):
        return _strip(value)[0] if fs.strategy == "replace" else _merge_map(have, value, fs.type)
    if isinstance(value, list):
        return _merge_list(have, value, fs) if fs.strategy == "merge" else _strip(value)[0]
    return value


def strategic_merge_patch(
    target: Mapping[str, Any], patch: Mapping[str, Any], kind: str
) -> dict[str, Any]:
    """Apply a strategic merge patch to an object of ``kind`` (``"/v1/Pod"``, ...)."""
    if not isinstance(patch, Mapping):
        raise PatchError("strategic merge patch must be a JSON object", 400)
    return _merge_map(copy.deepcopy(dict(target)), copy.deepcopy(dict(patch)), kind_strategy(kind))
