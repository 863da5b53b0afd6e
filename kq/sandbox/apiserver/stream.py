"""Writing one watch stream: event encoding, batching, bookmarks and the timeout."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from kq import jsoncodec
from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.store import Obj
from kq.sandbox.apiserver.tables import table
from kq.sandbox.apiserver.watch import Event, Subscriber

# Events written per socket write when a watcher has fallen behind.
_BATCH = 256


class EncodingCache:
    """Plain JSON lines shared by every watcher of the same version (bounded)."""

    def __init__(self, limit: int = 8192) -> None:
        self._lines: dict[tuple[str, str, str, str], bytes] = {}
        self._limit = limit

    def line(self, key: tuple[str, str, str, str], build: Callable[[], bytes]) -> bytes:
        found = self._lines.get(key)
        if found is None:
            if len(self._lines) >= self._limit:
                self._lines.clear()
            found = self._lines[key] = build()
        return found


def _dump(obj: object) -> bytes:
    return jsoncodec.dumps(obj) + b"\n"


@dataclass
class WatchStream:
    """Feeds ``sub``'s events to ``response`` until the timeout or the subscriber closes."""

    response: web.StreamResponse
    sub: Subscriber
    rt: ResourceType
    convert: Callable[[Obj], Obj]
    published_rv: Callable[[], int]
    cache: EncodingCache
    table_include: str | None = None
    bookmarks: bool = False
    bookmark_interval: float = 15.0
    _headers: bool = True
    _ended: bool = False

    def _encode(self, event: Event) -> bytes:
        kind, obj, body = event
        if self.table_include is not None:
            rv = obj["metadata"].get("resourceVersion", "")
            rows = table(self.rt, [self.convert(obj)], rv, self.table_include, self._headers)
            self._headers = False
            return _dump({"type": kind, "object": rows})
        meta = obj["metadata"]
        key = (kind, meta.get("resourceVersion", ""), meta.get("uid", ""), self.rt.api_version)
        return self.cache.line(key, lambda: self._line(kind, obj, body))

    def _line(self, kind: str, obj: Obj, body: str | None) -> bytes:
        """The event's JSON line, embedding the committed JSON when it is what is served."""
        served = self.convert(obj)
        if served is obj and body is not None:
            return f'{{"type":{json.dumps(kind)},"object":{body}}}\n'.encode()
        return _dump({"type": kind, "object": served})

    async def _send_bookmark(self, initial_end: bool = False) -> None:
        """Nothing while events are queued (they go first): a bookmark past them would have a
        client that resumes from it skip them."""
        rv = self.sub.vouched_rv(self.published_rv())
        if rv is None:
            return
        meta: Obj = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta}
        await self.response.write(_dump({"type": "BOOKMARK", "object": obj}))

    def _pending(self) -> tuple[list[Event], bool]:
        """Events already queued (without waiting); the flag says the stream must end."""
        events: list[Event] = []
        while len(events) < _BATCH and not self.sub.queue.empty():
            event = self.sub.queue.get_nowait()
            if event is None:
                return events, True
            events.append(event)
        return events, False

    async def _drain(self) -> bool:
        """Send every queued event; False when the subscriber closed meanwhile."""
        while True:
            events, done = self._pending()
            if events:
                await self.response.write(b"".join(self._encode(e) for e in events))
            if done:
                self._ended = True
                return False
            if not events:
                return True

    async def initial_events_end(self) -> None:
        """Send the queued initial state, then the WatchList end-of-initial-events bookmark."""
        if await self._drain():
            await self._send_bookmark(initial_end=True)

    async def run(self, deadline: float) -> None:
        """Stream until the monotonic ``deadline``."""
        while not self._ended:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                # What is queued goes out before the stream ends: the client resumes from the
                # last revision it saw, and an event dropped here would be lost to it.
                if await self._drain() and self.bookmarks:
                    await self._send_bookmark()
                return
            try:
                # Not wait_for: on Python 3.11 it can drop the cancel of a disconnected watch.
                async with asyncio.timeout(min(remaining, self.bookmark_interval)):
                    first = await self.sub.queue.get()
            except TimeoutError:
                if self.bookmarks and time.monotonic() < deadline:
                    await self._send_bookmark()
                continue
            if first is None:
                return
            events, done = self._pending()
            await self.response.write(b"".join(self._encode(e) for e in [first, *events]))
            if done:
                return
