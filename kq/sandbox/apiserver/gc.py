"""Garbage collection: ownerReference cascades, foreground deletion, namespace termination."""

from __future__ import annotations

import asyncio
import copy
import logging

from kq.sandbox.apiserver.api import Api
from kq.sandbox.apiserver.context import Ctx
from kq.sandbox.apiserver.deletion import finalized
from kq.sandbox.apiserver.errors import ApiError
from kq.sandbox.apiserver.registry import NAMESPACE
from kq.sandbox.apiserver.store import Change, Obj, owner_uids

log = logging.getLogger(__name__)

Task = tuple[str, str]  # (what, uid or namespace name)


class Collector:
    """Reacts to committed changes; does the deletions asynchronously, like upstream."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.store = api.store
        self._queue: asyncio.Queue[Task] = asyncio.Queue()
        self._pending: set[Task] = set()
        self.store.listeners.append(self._on_change)

    def _schedule(self, task: Task) -> None:
        if task not in self._pending:
            self._pending.add(task)
            self._queue.put_nowait(task)

    def _on_change(self, change: Change) -> None:
        meta = change.obj["metadata"]
        if change.type == "DELETED":
            uid = meta.get("uid", "")
            if uid in self.store.dependents:
                self._schedule(("orphaned", uid))
            for owner in owner_uids(change.obj):
                self._schedule(("foreground", owner))
            if change.namespace:
                ns = self.store.get(NAMESPACE.storage, "", change.namespace)
                if ns is not None and ns["metadata"].get("deletionTimestamp"):
                    self._schedule(("namespace", change.namespace))
        elif meta.get("deletionTimestamp"):
            if change.resource == NAMESPACE.storage:
                self._schedule(("namespace", change.name))
            elif "foregroundDeletion" in (meta.get("finalizers") or ()):
                self._schedule(("foreground", meta.get("uid", "")))
        else:
            # Created (or re-pointed) with owners that do not exist: collect it, as upstream.
            for owner in owner_uids(change.obj) - owner_uids(change.prev):
                if owner not in self.store.by_uid:
                    self._schedule(("orphaned", owner))

    async def run(self) -> None:
        while True:
            task = await self._queue.get()
            self._pending.discard(task)
            try:
                await self._process(task)
            except Exception:
                log.exception("garbage collection of %s failed", task)

    async def _process(self, task: Task) -> None:
        what, key = task
        if what == "orphaned":
            await self._collect_orphans(key)
        elif what == "foreground":
            await self._foreground(key)
        else:
            await self._namespace(key)

    async def _delete(self, resource: str, ns: str, name: str, policy: str) -> None:
        rt = self.api.registry.by_storage(resource)
        if rt is None:
            return
        try:
            await self.api.delete(rt, ns, name, {"propagationPolicy": policy}, Ctx())
        except ApiError as exc:
            if exc.code != 404:
                raise

    async def _collect_orphans(self, owner: str) -> None:
        for resource, ns, name in sorted(self.store.dependents.get(owner, set())):
            obj = self.store.get(resource, ns, name)
            if obj is None:
                continue
            alive = [uid for uid in owner_uids(obj) if uid in self.store.by_uid]
            if not alive:
                await self._delete(resource, ns, name, "Background")

    async def _foreground(self, uid: str) -> None:
        key = self.store.by_uid.get(uid)
        if key is None:
            return
        owner = self.store.get(*key)
        if owner is None or "foregroundDeletion" not in (owner["metadata"].get("finalizers") or ()):
            return
        dependents = sorted(self.store.dependents.get(uid, set()))
        for resource, ns, name in dependents:
            obj = self.store.get(resource, ns, name)
            if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                await self._delete(resource, ns, name, "Foreground")
        if not self.store.dependents.get(uid):
            self._finish(key[0], owner)

    def _finish(self, resource: str, owner: Obj) -> None:
        new = copy.deepcopy(owner)
        finalizers = [
            f for f in new["metadata"].get("finalizers") or () if f != "foregroundDeletion"
        ]
        if finalizers:
            new["metadata"]["finalizers"] = finalizers
        else:
            del new["metadata"]["finalizers"]
        if finalized(new["metadata"], owner["metadata"]):
            self.store.remove(resource, owner)
        else:  # other finalizers, or a pod whose grace period runs: the kubelet ends it
            self.store.put(resource, new, owner)

    async def _namespace(self, name: str) -> None:
        ns = self.store.get(NAMESPACE.storage, "", name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        for resource, obj_name in self.store.namespaced_keys(name):
            obj = self.store.get(resource, name, obj_name)
            if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                await self._delete(resource, name, obj_name, "Background")
        if not self.store.namespaced_keys(name) and not ns["metadata"].get("finalizers"):
            self.store.remove(NAMESPACE.storage, ns)
