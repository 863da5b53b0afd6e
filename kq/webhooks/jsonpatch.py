"""The RFC 6902 JSON Patch that turns one JSON document into another, as a mutating webhook
returns it. Objects are compared key by key; a changed list is replaced whole, which every
patch applier (the API server included) handles and which keeps the patch obviously right.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

Operation = dict[str, Any]


def diff(before: Any, after: Any) -> list[Operation]:
    """Operations that transform ``before`` into ``after``; empty when they are equal."""
    return _diff(before, after, "")


def pointer(path: str, key: str) -> str:
    """``path`` extended by ``key``, escaped as RFC 6901 requires (``~`` then ``/``)."""
    return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"


def _diff(before: Any, after: Any, path: str) -> list[Operation]:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        ops: list[Operation] = [
            {"op": "remove", "path": pointer(path, k)} for k in before if k not in after
        ]
        for k, value in after.items():
            if k not in before:
                ops.append({"op": "add", "path": pointer(path, k), "value": copy.deepcopy(value)})
            else:
                ops += _diff(before[k], value, pointer(path, k))
        return ops
    if _same(before, after):
        return []
    return [{"op": "replace", "path": path, "value": copy.deepcopy(after)}]


def _same(a: Any, b: Any) -> bool:
    # Python's == says True == 1 and 1 == 1.0; JSON tells them apart, so compare serialized.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
