"""Plain-dict helpers shared by the framework and the integrations: metadata, conditions, patches.

Jobs and Workloads are handled as the API returns them (JSON-like dicts); nothing here mutates
its input, every "setter" returns a new object.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

Obj = Mapping[str, Any]
"""A Kubernetes object as the API returns it."""


def meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def name(obj: Obj) -> str:
    return str(meta(obj).get("name", ""))


def namespace(obj: Obj) -> str:
    return str(meta(obj).get("namespace", ""))


def uid(obj: Obj) -> str:
    return str(meta(obj).get("uid", ""))


def key(obj: Obj) -> str:
    """``namespace/name``, as Kueue prints objects in events."""
    return f"{namespace(obj)}/{name(obj)}"


def labels(obj: Obj) -> Mapping[str, str]:
    return meta(obj).get("labels") or {}


def annotations_of(obj: Obj) -> Mapping[str, str]:
    return meta(obj).get("annotations") or {}


def is_deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def controller_owner(obj: Obj) -> Mapping[str, Any] | None:
    for ref in meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def conditions(obj: Obj) -> list[Mapping[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or ())


def find_condition(obj: Obj, type_: str) -> Mapping[str, Any] | None:
    for condition in conditions(obj):
        if condition.get("type") == type_:
            return condition
    return None


def condition_is_true(obj: Obj, type_: str) -> bool:
    condition = find_condition(obj, type_)
    return condition is not None and condition.get("status") == "True"


def deep_copy(obj: Obj) -> dict[str, Any]:
    return copy.deepcopy(dict(obj))


def dig(obj: Obj, *path: str) -> Any:
    """The value at ``path``, or ``None`` when any step is missing."""
    value: Any = obj
    for step in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


def merge_patch(old: Obj, new: Obj) -> dict[str, Any]:
    """The RFC 7386 JSON merge patch that turns ``old`` into ``new`` (lists are replaced)."""
    patch: dict[str, Any] = {}
    for k in old.keys() - new.keys():
        patch[k] = None
    for k, value in new.items():
        before = old.get(k)
        if k in old and before == value:
            continue
        if isinstance(before, Mapping) and isinstance(value, Mapping):
            patch[k] = merge_patch(before, value)
        else:
            patch[k] = copy.deepcopy(value)
    return patch
