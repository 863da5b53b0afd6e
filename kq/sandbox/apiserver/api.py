"""The verbs (get, list, create, update, patch, delete) with Kubernetes semantics."""

from __future__ import annotations

import copy
import secrets
import string
import uuid
from typing import Any

from kq.sandbox.apiserver import builtin, deletion, errors, limits, patching
from kq.sandbox.apiserver.apply import (
    ApplyConflict,
    schema_types,
    server_side_apply,
)
from kq.sandbox.apiserver.context import Admission, Ctx, now
from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.patching import APPLY, MERGE
from kq.sandbox.apiserver.registry import CRD, NAMESPACE, Registry, ResourceType
from kq.sandbox.apiserver.schema import Schema
from kq.sandbox.apiserver.store import Obj, ObjectTooLarge, Store
from kq.sandbox.apiserver.watch import Filter
from kq.sandbox.apiserver.writes import (
    SERVER_META,
    apply_schema,
    checked_body,
    fail_if_invalid,
    keep_server_meta,
    main_write,
    managed_fields,
    new_finalizers_while_deleting,
    set_namespace,
    spec_view,
    status_write,
    without_volatile,
)

_ALPHANUM = string.ascii_lowercase + string.digits


class Api:
    """Kubernetes object semantics on top of the store."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self.admission: Admission | None = None
        # (storage, namespace, name) -> (resourceVersion, schema) of stored objects that
        # defaulting leaves unchanged: reads serve them without a defaulted copy.
        self._defaulted: dict[tuple[str, str, str], tuple[str, Schema]] = {}

    # --- reads -------------------------------------------------------------------

    def get(self, rt: ResourceType, ns: str, name: str) -> Obj:
        obj = self.store.get(rt.storage, ns if rt.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rt.group, rt.plural, name)
        return self.convert(rt, obj)

    def list_objects(self, rt: ResourceType, flt: Filter) -> list[Obj]:
        items = self.store.select(rt.storage, flt.namespace)
        return [self.convert(rt, o) for o in items if flt.matches(o)]

    def convert(self, rt: ResourceType, obj: Obj) -> Obj:
        """The object as served in ``rt``'s version, with schema defaults applied on read
        (like upstream, so objects stored before a CRD gained a default get it too)."""
        obj = self.in_version(rt, obj, rt.api_version)
        if rt.schema is not None and rt.defaults and not self._already_defaulted(rt, obj):
            defaulted: Obj = rt.schema.default(obj)
            defaulted["apiVersion"] = rt.api_version
            return defaulted
        return obj

    @staticmethod
    def in_version(rt: ResourceType, obj: Obj, api_version: str) -> Obj:
        """``obj`` (one of ``rt``'s resource, in any served version) in ``api_version``:
        converted by ``rt.converter``, or with only its apiVersion changed when it has none."""
        if obj.get("apiVersion") == api_version:
            return obj
        if rt.converter is None:
            return {**obj, "apiVersion": api_version}
        try:
            return rt.converter(obj, api_version)
        except ValueError as exc:
            raise ApiError(
                500, "InternalError", f"conversion to {api_version} failed: {exc}"
            ) from exc

    def _already_defaulted(self, rt: ResourceType, obj: Obj) -> bool:
        meta = obj["metadata"]
        key = (rt.storage, meta.get("namespace", ""), meta["name"])
        return self._defaulted.get(key) == (meta.get("resourceVersion"), rt.schema)

    def _note_defaulted(self, rt: ResourceType, stored: Obj, defaulted: bool) -> None:
        """Remember a written object that is its own defaulted form: defaulted on the way in,
        and not changed by a mutating webhook since."""
        meta = stored["metadata"]
        key = (rt.storage, meta.get("namespace", ""), meta["name"])
        self._defaulted.pop(key, None)
        if defaulted and rt.schema is not None and rt.defaults:
            self._defaulted[key] = (meta["resourceVersion"], rt.schema)

    # --- create ------------------------------------------------------------------

    async def create(
        self, rt: ResourceType, ns: str, body: Any, ctx: Ctx, *, owned: bool = False
    ) -> Obj:
        """Create from ``body``; ``owned`` says the caller hands it over to be mutated."""
        obj = checked_body(rt, body, owned=owned)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        set_namespace(rt, ns, meta)
        if rt.namespaced:
            self._check_namespace(meta["namespace"])
        for key in (*SERVER_META, "resourceVersion", "selfLink", "generation"):
            meta.pop(key, None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice(_ALPHANUM) for _ in range(5)
            )
        name = meta.get("name") or ""
        fail_if_invalid(rt, name, builtin.validate_name(rt, name))
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if rt.generation:
            meta["generation"] = 1
        if rt.status and not builtin.keeps_status_on_create(rt):
            obj.pop("status", None)
        if rt.builtin:
            builtin.prepare_create(rt, obj)
        obj = apply_schema(rt, obj, ctx)
        fail_if_invalid(rt, name, builtin.validate(rt, obj, None))
        defaulted = obj
        if self.admission is not None:
            obj = await self.admission("CREATE", rt, obj, None, ctx)
        if self.store.get(rt.storage, meta.get("namespace", ""), name) is not None:
            raise errors.already_exists(rt.group, rt.plural, name)
        if ctx.manager and "managedFields" not in meta:
            obj["metadata"]["managedFields"] = managed_fields(rt, None, obj, ctx.manager)
        return self._write(rt, obj, None, ctx, defaulted=obj is defaulted)

    def _check_namespace(self, ns: str) -> None:
        namespace = self.store.get(NAMESPACE.storage, "", ns)
        if namespace is None:
            raise errors.not_found("", "namespaces", ns)
        if namespace["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                f"unable to create new content in namespace {ns} because it is being terminated"
            )

    def _unchanged_since(self, rt: ResourceType, live: Obj) -> None:
        """Refuse a write whose base changed while admission webhooks were awaited."""
        meta = live["metadata"]
        current = self.store.get(rt.storage, meta.get("namespace", ""), meta["name"])
        if current is None or current["metadata"]["resourceVersion"] != meta["resourceVersion"]:
            raise errors.conflict(rt.group, rt.plural, meta["name"], errors.STALE)

    # --- update and patch --------------------------------------------------------

    async def update(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        body: Any,
        ctx: Ctx,
        sub: str = "",
        *,
        owned: bool = False,
    ) -> Obj:
        """Replace with ``body``; ``owned`` as for ``create``."""
        live = self.get(rt, ns, name)
        obj = checked_body(rt, body, owned=owned)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        rv = meta.get("resourceVersion")
        if rv and rv != live["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.group, rt.plural, name, errors.STALE)
        return await self._replace(rt, live, obj, ctx, sub)

    async def _replace(
        self, rt: ResourceType, live: Obj, obj: Obj, ctx: Ctx, sub: str, *, shares: bool = False
    ) -> Obj:
        """Write ``obj`` over ``live``. ``obj`` is the caller's to mutate, except that with
        ``shares`` only its top-level dict is: its values may be ``live``'s."""
        name = live["metadata"]["name"]
        # A status write keeps the stored spec: only what it can change is checked again.
        unchanged = frozenset({"spec"}) if sub == "status" else frozenset()
        if sub == "status":
            new = status_write(rt, live, obj, unchanged, shares=shares)
        else:
            new = main_write(rt, live, obj, shares=shares)
        meta = new.setdefault("metadata", {})
        old_meta = live["metadata"]
        keep_server_meta(meta, old_meta)
        fail_if_invalid(rt, name, new_finalizers_while_deleting(meta, old_meta))
        if rt.builtin:
            builtin.prepare_update(rt, new)
        new = apply_schema(rt, new, ctx, unchanged)
        fail_if_invalid(rt, name, builtin.validate(rt, new, live))
        defaulted = new
        if rt.generation and spec_view(rt, new) != spec_view(rt, live):
            new["metadata"]["generation"] = int(old_meta.get("generation") or 0) + 1
        if self.admission is not None:
            new = await self.admission("UPDATE", rt, new, live, ctx)
            self._unchanged_since(rt, live)
        if ctx.manager:
            new["metadata"]["managedFields"] = managed_fields(rt, live, new, ctx.manager)
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if without_volatile(new) == without_volatile(live):
            return live
        if rt != NAMESPACE and deletion.finalized(meta, old_meta):
            # The answer is the object as updated, as kube-apiserver's: a client tells it is gone
            # by its finalizers, which the state stored before still lists.
            self._remove(rt, live, ctx)
            return new
        return self._write(rt, new, live, ctx, defaulted=new is defaulted)

    async def patch(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        content_type: str,
        raw: bytes,
        ctx: Ctx,
        sub: str = "",
    ) -> tuple[Obj, bool]:
        """Apply a patch; the flag is True when server-side apply created the object."""
        patching.check_media(rt, content_type)
        if content_type == APPLY:
            return await self._server_side_apply(rt, ns, name, raw, ctx, sub)
        live = self.get(rt, ns, name)
        patched = patching.patched(rt, live, content_type, raw)
        rv = (patched.get("metadata") or {}).get("resourceVersion")
        if rv and rv != live["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.group, rt.plural, name, errors.STALE)
        # Only a merge patch result shares parts with ``live``; the others are fresh.
        obj = checked_body(rt, patched, owned=True)
        return await self._replace(rt, live, obj, ctx, sub, shares=content_type == MERGE), False

    async def _server_side_apply(
        self, rt: ResourceType, ns: str, name: str, raw: bytes, ctx: Ctx, sub: str
    ) -> tuple[Obj, bool]:
        if not ctx.manager:
            raise errors.bad_request(
                "PATCH, application/apply-patch+yaml requests must have fieldManager set"
            )
        applied = checked_body(rt, patching.applied(raw), owned=True)
        meta = applied.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise errors.bad_request("the name of the object does not match the name on the URL")
        meta["name"] = name
        set_namespace(rt, ns, meta)
        live = self.store.get(rt.storage, ns if rt.namespaced else "", name)
        if live is not None:
            # Merged in the version applied; nothing changes for objects stored in it.
            live = self.in_version(rt, live, rt.api_version)
        types = schema_types(rt.schema) if rt.schema is not None else None
        try:
            result = server_side_apply(
                live, applied, ctx.manager, force=ctx.force, kind=rt.strategy_kind, types=types
            )
        except ApplyConflict as exc:
            raise patching.apply_conflict(exc) from exc
        manager, ctx.manager = ctx.manager, None
        try:
            if live is None:
                if sub:
                    raise errors.not_found(rt.group, rt.plural, name)
                return await self.create(rt, ns, result.object, ctx), True
            return await self._replace(rt, self.convert(rt, live), result.object, ctx, sub), False
        finally:
            ctx.manager = manager

    # --- delete ------------------------------------------------------------------

    async def delete(
        self, rt: ResourceType, ns: str, name: str, options: dict[str, Any], ctx: Ctx
    ) -> tuple[Obj, bool]:
        """Delete or start deleting; the flag is True when the object is gone."""
        live = self.get(rt, ns, name)
        meta = live["metadata"]
        deletion.check_preconditions(rt, name, meta, options)
        if self.admission is not None:
            await self.admission("DELETE", rt, live, live, ctx)
            self._unchanged_since(rt, live)
        policy = deletion.propagation_policy(rt, options)
        uid = meta.get("uid", "")
        dependents = self.store.dependents.get(uid, set())
        if policy == "Orphan" and not ctx.dry_run:
            deletion.orphan(self.store, uid)
        new = copy.deepcopy(live)
        new_meta = new["metadata"]
        finalizers = list(new_meta.get("finalizers") or ())
        if policy == "Foreground" and dependents and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
            new_meta["finalizers"] = finalizers
        grace = deletion.next_grace(rt, live, options)
        if rt == NAMESPACE:
            new.setdefault("status", {})["phase"] = "Terminating"
        elif not finalizers and grace == 0:
            return self._remove(rt, live, ctx), True
        if grace is not None:
            deletion.mark_deleting(new_meta, grace)
        if new == live:
            return live, False
        return self._write(rt, new, live, ctx), False

    async def delete_collection(
        self, rt: ResourceType, flt: Filter, options: dict[str, Any], ctx: Ctx
    ) -> list[Obj]:
        deleted = []
        for obj in self.list_objects(rt, flt):
            meta = obj["metadata"]
            try:
                item, _ = await self.delete(
                    rt, meta.get("namespace", ""), meta["name"], options, ctx
                )
            except ApiError as exc:
                if exc.code != 404:
                    raise
                continue
            deleted.append(item)
        return deleted

    # --- storage -----------------------------------------------------------------

    def _write(
        self, rt: ResourceType, obj: Obj, prev: Obj | None, ctx: Ctx, *, defaulted: bool = False
    ) -> Obj:
        """Store ``obj``; ``defaulted`` says it went through the schema and nothing since."""
        if ctx.dry_run:
            return obj
        stored = dict(obj)
        if rt.storage_api_version != rt.api_version:
            # Kept in the storage version; only an object defaulted in it counts as defaulted.
            stored = self.in_version(rt, stored, rt.storage_api_version)
            prev, defaulted = self._stored(rt, prev), False
        try:
            self.store.put(rt.storage, stored, prev)
        except ObjectTooLarge as exc:
            raise limits.object_too_large() from exc
        self._note_defaulted(rt, stored, defaulted)
        if rt == CRD:
            self._crd_changed(obj, removed=False)
        return self.convert(rt, stored)

    def _remove(self, rt: ResourceType, live: Obj, ctx: Ctx) -> Obj:
        if ctx.dry_run:
            return live
        change = self.store.remove(rt.storage, self._stored(rt, live) or live)
        meta = live["metadata"]
        self._defaulted.pop((rt.storage, meta.get("namespace", ""), meta["name"]), None)
        if rt == CRD:
            self._crd_changed(live, removed=True)
        return self.convert(rt, change.obj)

    def _stored(self, rt: ResourceType, served: Obj | None) -> Obj | None:
        """The stored state of ``served`` (an object as some version serves it)."""
        if served is None or served.get("apiVersion") == rt.storage_api_version:
            return served
        meta = served["metadata"]
        return self.store.get(rt.storage, meta.get("namespace", ""), meta["name"]) or served

    def _crd_changed(self, crd: Obj, *, removed: bool) -> None:
        if removed:
            for rt in self.registry.unregister_crd(crd["metadata"]["name"]):
                for obj in self.store.select(rt.storage):
                    self.store.remove(rt.storage, obj)
        else:
            self.registry.register_crd(crd)
