"""Watch fan-out: subscribers per storage key, selector transitions, bounded queues."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from kq.sandbox.apiserver.selectors import FieldSelector, LabelSelector
from kq.sandbox.apiserver.store import Change, Obj, Store

QUEUE_BOUND = 10_000

# (type, object, the object's committed JSON when known).
Event = tuple[str, Obj, str | None]


@dataclass(frozen=True)
class Filter:
    """Which objects a list or watch selects."""

    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    field_map: Callable[[Obj], dict[str, str]]

    def matches(self, obj: Obj) -> bool:
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if not self.labels.matches(meta.get("labels") or {}):
            return False
        return self.fields.empty() or self.fields.matches(self.field_map(obj))


def _with_rv(obj: Obj, rv: int) -> Obj:
    out = copy.copy(obj)
    out["metadata"] = {**obj["metadata"], "resourceVersion": str(rv)}
    return out


def event_for(change: Change, flt: Filter) -> Event | None:
    """The event a watcher with ``flt`` sees for ``change`` (None: nothing)."""
    old = change.prev is not None and flt.matches(change.prev)
    if change.type == "DELETED":
        return ("DELETED", change.obj, change.body) if old else None
    new = flt.matches(change.obj)
    if new:
        return ("MODIFIED" if old else "ADDED", change.obj, change.body)
    if old and change.prev is not None:
        return ("DELETED", _with_rv(change.prev, change.rv), None)
    return None


@dataclass(eq=False)
class Subscriber:
    resource: str
    filter: Filter
    queue: asyncio.Queue[Event | None] = field(default_factory=lambda: asyncio.Queue(QUEUE_BOUND))
    closed: bool = False
    # A watch from a revision not yet reached sees only the changes after it, as upstream's.
    after: int = 0

    def vouched_rv(self, published: int) -> int | None:
        """The revision a bookmark may carry: with nothing queued, every change up to the
        published one was sent or filtered out. None while events wait to be sent."""
        return None if not self.queue.empty() else max(self.after, published)

    def offer(self, event: Event) -> None:
        if self.closed:
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.close()

    def close(self) -> None:
        """End the stream: a stuck client re-watches from its last revision."""
        if self.closed:
            return
        self.closed = True
        while not self.queue.empty():
            self.queue.get_nowait()
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(None)


class Hub:
    """Publishes committed changes to the subscribers of their storage key."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._subs: dict[str, set[Subscriber]] = {}
        # The revision every subscriber has been offered: the store's may be ahead of it by
        # writes of this turn, which reach the subscribers only when the store flushes.
        self.published_rv = store.rv
        store.listeners.append(self.publish)

    def subscribe(self, resource: str, flt: Filter, since: int | None) -> Subscriber | None:
        """Register a watcher and queue its backlog, atomically (no await).

        ``since`` None replays the current state as ADDED events; otherwise the changes
        after that revision are replayed.  None is returned when they were compacted.
        """
        # Writes not yet published would reach this watcher twice: in its backlog, and again
        # when their commit publishes them.
        self.store.flush()
        sub = Subscriber(resource, flt, after=since or 0)
        if since is None:
            for obj in self.store.select(resource, flt.namespace):
                if flt.matches(obj):
                    sub.offer(("ADDED", obj, self.store.encoded(resource, obj)))
        else:
            changes = self.store.since(since)
            if changes is None:
                return None
            for change in changes:
                if change.resource == resource:
                    event = event_for(change, flt)
                    if event is not None:
                        sub.offer(event)
        self._subs.setdefault(resource, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        subs = self._subs.get(sub.resource)
        if subs is not None:
            subs.discard(sub)

    def publish(self, change: Change) -> None:
        self.published_rv = change.rv
        for sub in list(self._subs.get(change.resource, ())):
            if change.rv <= sub.after:
                continue
            event = event_for(change, sub.filter)
            if event is not None:
                sub.offer(event)

    def close_all(self) -> int:
        """Drop every open watch stream; return how many there were."""
        subs = [s for group in self._subs.values() for s in group]
        for sub in subs:
            sub.close()
        return len(subs)
