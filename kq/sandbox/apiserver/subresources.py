"""The ``scale``, ``binding`` and ``eviction`` subresources."""

from __future__ import annotations

import json
from typing import Any

from kq.sandbox.apiserver import errors
from kq.sandbox.apiserver.api import Api
from kq.sandbox.apiserver.context import Ctx, now
from kq.sandbox.apiserver.patching import MERGE
from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.store import Obj


def allowed(rt: ResourceType, sub: str) -> bool:
    if sub == "status":
        return rt.status
    if sub == "scale":
        return rt.scale is not None
    return sub in ("binding", "eviction") and (rt.group, rt.kind) == ("", "Pod")


def _get_path(obj: Any, path: str) -> Any:
    for part in path.strip(".").split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _patch_for(path: str, value: Any) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    node = patch
    parts = path.strip(".").split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return patch


async def scale(api: Api, rt: ResourceType, ns: str, name: str, body: Any | None, ctx: Ctx) -> Obj:
    """Read the Scale of an object, or set its replicas when ``body`` is given."""
    paths = rt.scale or {}
    spec_path = str(paths.get("specReplicasPath", ".spec.replicas"))
    obj = api.get(rt, ns, name)
    if body is not None:
        replicas = (body.get("spec") or {}).get("replicas") if isinstance(body, dict) else None
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise errors.bad_request("spec.replicas must be an integer")
        raw = json.dumps(_patch_for(spec_path, replicas)).encode()
        obj, _ = await api.patch(rt, ns, name, MERGE, raw, ctx)
    meta = obj["metadata"]
    status: Obj = {"replicas": _get_path(obj, str(paths.get("statusReplicasPath", ""))) or 0}
    selector = _get_path(obj, str(paths.get("labelSelectorPath", "")))
    if isinstance(selector, str):
        status["selector"] = selector
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": _get_path(obj, spec_path) or 0},
        "status": status,
    }


async def bind(api: Api, rt: ResourceType, ns: str, name: str, body: Any, ctx: Ctx) -> Obj:
    """Assign a pod to a node, as the scheduler does, and mark it scheduled."""
    target = (body or {}).get("target") or {} if isinstance(body, dict) else {}
    node = target.get("name")
    if not node:
        raise errors.bad_request("binding target name is required")
    pod = api.get(rt, ns, name)
    if (pod.get("spec") or {}).get("nodeName"):
        raise errors.conflict(
            rt.group, rt.plural, name, f"pod {name} is already assigned to node "
            f'"{pod["spec"]["nodeName"]}"',
        )  # fmt: skip
    await api.patch(rt, ns, name, MERGE, json.dumps({"spec": {"nodeName": node}}).encode(), ctx)
    conditions = [
        c
        for c in (pod.get("status") or {}).get("conditions") or ()
        if c.get("type") != "PodScheduled"
    ]
    conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now()})
    status = json.dumps({"status": {"conditions": conditions}}).encode()
    await api.patch(rt, ns, name, MERGE, status, ctx, "status")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


async def evict(api: Api, rt: ResourceType, ns: str, name: str, body: Any, ctx: Ctx) -> Obj:
    """Delete a pod through the eviction API (PodDisruptionBudgets are not checked)."""
    options = (body or {}).get("deleteOptions") or {} if isinstance(body, dict) else {}
    await api.delete(rt, ns, name, options, ctx)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
