"""How a write's new object is formed from the request and the stored object: the body's
checks, what a write may mutate, the status a main write keeps (and a status write takes), the
metadata the server owns, the schema's pruning, defaults and validation, and managedFields."""

from __future__ import annotations

import copy
from typing import Any

from kq.sandbox.apiserver import errors
from kq.sandbox.apiserver.apply import record_update, schema_types
from kq.sandbox.apiserver.context import Ctx
from kq.sandbox.apiserver.registry import CRD, ResourceType
from kq.sandbox.apiserver.schema import FieldError
from kq.sandbox.apiserver.store import Obj

# Metadata the server owns: clients cannot change it with an update.
SERVER_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")


def spec_view(rt: ResourceType, obj: Obj) -> Obj:
    skip = {"metadata", "status"} if rt.status else {"metadata"}
    return {k: v for k, v in obj.items() if k not in skip}


def without_volatile(obj: Obj) -> Obj:
    meta = dict(obj.get("metadata", {}))
    meta.pop("resourceVersion", None)
    meta["managedFields"] = [
        {k: v for k, v in entry.items() if k != "time"} for entry in meta.get("managedFields") or ()
    ]
    return {**obj, "metadata": meta}


def copy_for_write(obj: Obj, shared: frozenset[str]) -> Obj:
    """A copy of ``obj`` that a write may mutate, but for the top-level fields in ``shared``
    (left as they are) and ``metadata.managedFields`` (only ever replaced whole)."""
    new = {}
    for key, value in obj.items():
        if key in shared:
            new[key] = value
        elif key == "metadata" and isinstance(value, dict):
            new[key] = {
                k: v if k == "managedFields" else copy.deepcopy(v) for k, v in value.items()
            }
        else:
            new[key] = copy.deepcopy(value)
    return new


def unshared(value: Any, stored: Any) -> Any:
    """``value`` (a merge patch result over ``stored``) with the subtrees it shares with
    ``stored`` copied: the merge made new maps only on the patch's paths."""
    if value is stored:
        return copy.deepcopy(value)
    if isinstance(value, dict) and isinstance(stored, dict):
        for key, item in value.items():
            if isinstance(item, dict | list):
                value[key] = unshared(item, stored.get(key))
    return value


def main_write(rt: ResourceType, live: Obj, obj: Obj, *, shares: bool) -> Obj:
    """``obj`` with the stored status, when the resource has a status subresource."""
    # The live status replaces the given one, so it needs no copy here.
    kept = frozenset({"status"}) if rt.status else frozenset()
    new = copy_for_write(obj, kept) if shares else obj
    if rt.status:
        if "status" in live:
            new["status"] = copy.deepcopy(live["status"])
        else:
            new.pop("status", None)
    return new


def keep_server_meta(meta: dict[str, Any], old_meta: dict[str, Any]) -> None:
    """An update cannot change server-owned metadata, nor drop managedFields by omitting it."""
    for key in (*SERVER_META, "name", "namespace", "generation"):
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if "managedFields" not in meta and "managedFields" in old_meta:
        meta["managedFields"] = old_meta["managedFields"]


def new_finalizers_while_deleting(
    meta: dict[str, Any], old_meta: dict[str, Any]
) -> list[FieldError]:
    if not old_meta.get("deletionTimestamp"):
        return []
    if not set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ()):
        return []
    message = "Forbidden: no new finalizers can be added if the object is being deleted"
    return [FieldError("metadata.finalizers", "FieldValueForbidden", message)]


def checked_body(rt: ResourceType, body: Any, *, owned: bool) -> Obj:
    """``body`` checked against ``rt``, as an object the write may mutate: ``body``
    itself when ``owned`` (nobody else holds it), else a copy."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    obj = body if owned else copy.deepcopy(body)
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if (kind and kind != rt.kind) or (api_version and api_version != rt.api_version):
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({rt.api_version})"
            if api_version != rt.api_version
            else f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        )
    obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
    return obj


def set_namespace(rt: ResourceType, ns: str, meta: dict[str, Any]) -> None:
    if not rt.namespaced:
        meta.pop("namespace", None)
        return
    given = meta.get("namespace")
    if given and given != ns:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    meta["namespace"] = ns


def fail_if_invalid(rt: ResourceType, name: str, errs: list[FieldError]) -> None:
    if errs:
        raise errors.invalid(rt.group, rt.kind, name, errs)


def apply_schema(
    rt: ResourceType, obj: Obj, ctx: Ctx, unchanged: frozenset[str] = frozenset()
) -> Obj:
    """Prune, default and validate ``obj``, which callers pass as their own copy;
    top-level fields in ``unchanged`` are the stored object's and were checked then."""
    if rt.schema is None:
        return obj
    pruned, dropped = rt.schema.prune_in_place(obj, unchanged)
    if dropped and ctx.validation == "Strict":
        unknown = ", ".join(f'unknown field "{p}"' for p in dropped)
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            f"strict decoding error: {unknown}"
        )
    if ctx.validation == "Warn":
        ctx.warnings.extend(f'unknown field "{p}"' for p in dropped)
    defaulted: Obj = rt.schema.default_in_place(pruned, unchanged)
    name = str(defaulted.get("metadata", {}).get("name", ""))
    fail_if_invalid(rt, name, rt.schema.validate(defaulted, unchanged))
    return defaulted


def managed_fields(rt: ResourceType, before: Obj | None, after: Obj, manager: str) -> Any:
    types = schema_types(rt.schema) if rt.schema is not None else None
    return record_update(before, after, manager, kind=rt.strategy_kind, types=types)


def status_write(
    rt: ResourceType, live: Obj, obj: Obj, unchanged: frozenset[str], *, shares: bool
) -> Obj:
    """The stored object with ``obj``'s status (none if it has none)."""
    new = copy_for_write(live, _untouched(rt, unchanged) | {"status"})
    new.pop("status", None)
    if "status" in obj:
        status = obj["status"]
        new["status"] = unshared(status, live.get("status")) if shares else status
    return new


def _untouched(rt: ResourceType, unchanged: frozenset[str]) -> frozenset[str]:
    """The ``unchanged`` fields that nothing on the write path mutates, so a new state
    may share them with the stored one.  Pruning under a root that preserves unknown
    fields ignores ``unchanged``, and CRD writes rewrite ``spec.names``: those objects
    are copied whole."""
    if rt == CRD or (rt.schema is not None and rt.schema.preserve_unknown):
        return frozenset()
    return unchanged
