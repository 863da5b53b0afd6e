"""The driver loop's own writes, laid over the informers' caches until they deliver them.

Informers lag behind the loop's writes, and the Job controller's finalizer accounting is only
correct on a view that includes them: every object the loop writes stays here until the informer
delivers that version (or a newer one), or until it expires.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kq.runtime.informer import Informer
from kq.runtime.store import Change, EventType, object_key
from kq.sandbox.cluster.actions import Obj, Ref, meta

_OVERLAY_TTL = 30.0
"""Wall seconds after which an overlay entry is dropped even if its version was never seen."""


def _rv_newer_or_same(seen: str, written: str) -> bool:
    """Whether version ``seen`` is at least ``written``; versions are integers on both backends."""
    if seen == written:
        return True
    return seen.isdigit() and written.isdigit() and int(seen) >= int(written)


@dataclass(slots=True)
class _Written:
    """What the loop last wrote to one object: its new state, or ``None`` once deleted."""

    obj: Obj | None
    uid: str
    version: str
    expires: float


def _key(ref: Ref) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


class Overlay:
    """Written objects by (kind, cache key), over the informers' stores by kind."""

    def __init__(self, informers: dict[str, Informer]) -> None:
        self.informers = informers
        self.entries: dict[tuple[str, str], _Written] = {}

    def delivered(self, kind: str, change: Change) -> None:
        """An informer event: the entry it catches up with is no longer needed."""
        key = (kind, object_key(change.obj))
        written = self.entries.get(key)
        if written is not None and _caught_up(written, change):
            del self.entries[key]

    def objects(self, kind: str) -> dict[str, Obj]:
        """The informer's objects with the loop's newer writes laid over them, by key."""
        objects = {object_key(o): o for o in self.informers[kind].store.values()}
        now = time.monotonic()
        for (k, key), written in list(self.entries.items()):
            if k != kind:
                continue
            if written.expires < now:
                del self.entries[(k, key)]
            elif written.obj is None:
                objects.pop(key, None)
            else:
                objects[key] = written.obj
        return objects

    def uids(self) -> set[str]:
        """Every object the loop can see or has just written."""
        uids = {w.uid for w in self.entries.values()}
        for informer in self.informers.values():
            uids.update(str(meta(o).get("uid", "")) for o in informer.store.values())
        return uids

    def remember(self, kind: str, obj: Obj | None, ref: Ref, version: str) -> None:
        """Keep the loop's write of ``ref`` (``None``: deleted) at ``version``."""
        key = _key(ref)
        cached = self.informers[kind].store.get(key)
        # The watch event can beat the response: then the cache is already as new.
        seen = str(meta(cached).get("resourceVersion", "")) if cached is not None else None
        if obj is not None and seen is not None and _rv_newer_or_same(seen, version):
            self.entries.pop((kind, key), None)
            return
        uid = str(meta(obj).get("uid", "")) if obj is not None else ref.uid
        self.entries[(kind, key)] = _Written(obj, uid, version, time.monotonic() + _OVERLAY_TTL)

    def current(self, kind: str, ref: Ref) -> Obj | None:
        """The newest state of ``ref`` the loop knows: its own write, else the cache's."""
        key = _key(ref)
        written = self.entries.get((kind, key))
        if written is not None:
            return written.obj
        return self.informers[kind].store.get(key)


def _caught_up(written: _Written, change: Change) -> bool:
    if change.type == EventType.DELETED:
        return True
    if written.obj is None and change.type == EventType.ADDED:
        return True  # created again after the deletion the tombstone stands for
    m = meta(change.obj)
    if written.uid and m.get("uid") != written.uid:
        return True  # another object under the same name
    seen = str(m.get("resourceVersion", ""))
    if written.obj is None:
        return seen != written.version and _rv_newer_or_same(seen, written.version)
    return _rv_newer_or_same(seen, written.version)
