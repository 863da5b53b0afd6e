"""The informer's local cache: objects by key, plus indexes kept in step on every change."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

Object = dict[str, Any]
IndexFunc = Callable[[Object], Iterable[str]]


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class Change:
    """One change to the store; ``old`` is the previous object (None when ADDED)."""

    type: EventType
    obj: Object
    old: Object | None


def object_key(obj: Object) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects, like client-go's key."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else str(meta["name"])


def by_namespace(obj: Object) -> Iterable[str]:
    namespace = obj["metadata"].get("namespace")
    return (namespace,) if namespace else ()


def by_owner_uid(obj: Object) -> Iterable[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences", ()) if "uid" in ref]


NAMESPACE_INDEX = "namespace"
OWNER_INDEX = "owner"


class Store:
    """Objects by key with named indexes; ``namespace`` and ``owner`` (uid) always exist."""

    def __init__(self) -> None:
        self._objects: dict[str, Object] = {}
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, set[str]]] = {}
        self.add_index(NAMESPACE_INDEX, by_namespace)
        self.add_index(OWNER_INDEX, by_owner_uid)

    def add_index(self, name: str, func: IndexFunc) -> None:
        """Add an index; objects already cached are indexed at once."""
        if name in self._index_funcs:
            raise ValueError(f"index {name!r} already exists")
        self._index_funcs[name] = func
        self._indexes[name] = {}
        for key, obj in self._objects.items():
            self._index_one(name, key, obj)

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: str) -> bool:
        return key in self._objects

    def get(self, key: str) -> Object | None:
        return self._objects.get(key)

    def keys(self) -> list[str]:
        return list(self._objects)

    def values(self) -> list[Object]:
        return list(self._objects.values())

    def by_index(self, name: str, value: str) -> list[Object]:
        keys = self._indexes[name].get(value, ())
        return [self._objects[key] for key in keys]

    def upsert(self, obj: Object) -> Change:
        key = object_key(obj)
        old = self._objects.get(key)
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = obj
        for name in self._index_funcs:
            self._index_one(name, key, obj)
        return Change(EventType.ADDED if old is None else EventType.MODIFIED, obj, old)

    def remove(self, obj: Object) -> Change:
        """Drop the object; the change carries the last cached version when there was one."""
        key = object_key(obj)
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return Change(EventType.DELETED, old or obj, old)

    def replace(self, objects: Iterable[Object]) -> list[Change]:
        """Swap in a fresh LIST and return the difference as changes, deletions last."""
        fresh = {object_key(obj): obj for obj in objects}
        changes: list[Change] = []
        for key, obj in fresh.items():
            old = self._objects.get(key)
            if old is None or _rv(old) != _rv(obj):
                changes.append(self.upsert(obj))
        for key in [key for key in self._objects if key not in fresh]:
            changes.append(self.remove(self._objects[key]))
        return changes

    def _index_one(self, name: str, key: str, obj: Object) -> None:
        index = self._indexes[name]
        for value in self._index_funcs[name](obj):
            index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Object) -> None:
        for name, func in self._index_funcs.items():
            index = self._indexes[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]


def _rv(obj: Object) -> object:
    return obj["metadata"].get("resourceVersion")
