"""A minimal RFC 6902 applier (add, remove, replace), to check patches independently of the diff."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any


def _tokens(path: str) -> list[str]:
    assert path.startswith("/"), path
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def apply_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    out = copy.deepcopy(doc)
    for op in ops:
        *parents, last = _tokens(op["path"])
        node = out
        for token in parents:
            node = node[int(token)] if isinstance(node, list) else node[token]
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
            if op["op"] == "add":
                node.insert(index, op["value"])
            elif op["op"] == "remove":
                del node[index]
            else:
                node[index] = op["value"]
        elif op["op"] == "remove":
            del node[last]
        else:
            assert op["op"] == "add" or last in node, op
            node[last] = op["value"]
    return out


def decoded_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSONPatch of an AdmissionReview ``response``; empty when it carries none."""
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return ops
