"""List responses: the list object, and pages cut by ``limit`` and resumed by ``continue``."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from kq.sandbox.apiserver import errors, limits
from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.store import Obj


def list_body(rt: ResourceType, items: list[Obj], rv: str, token: str = "") -> Obj:
    """The ``<Kind>List`` of ``items`` at ``rv``, with the continue token if there is more."""
    meta: Obj = {"resourceVersion": rv}
    if token:
        meta["continue"] = token
    return {
        "kind": f"{rt.kind}List",
        "apiVersion": rt.api_version,
        "metadata": meta,
        "items": items,
    }


def page(query: Mapping[str, str], items: list[Obj], rv: str) -> tuple[list[Obj], str, str]:
    """The page of ``items`` the query's ``continue`` and ``limit`` ask for, the resourceVersion
    it is read at (a continued list keeps its first page's) and the next page's token."""
    token = ""
    start = query.get("continue")
    if start:
        try:
            state = json.loads(base64.urlsafe_b64decode(start.encode()))
            after = (state["ns"], state["name"])
            rv = state["rv"]
        except (ValueError, KeyError, TypeError) as exc:
            raise errors.bad_request("continue key is not valid") from exc
        items = [
            o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after
        ]
    limit = limits.parse_int(query, "limit") or 0
    if limit > 0 and len(items) > limit:
        items = items[:limit]
        last = items[-1]["metadata"]
        state = {"rv": rv, "ns": last.get("namespace", ""), "name": last["name"]}
        token = base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
    return items, rv, token
