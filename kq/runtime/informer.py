"""List+watch of one kind into a local store, with change handlers.

The loop follows client-go's reflector: a paginated LIST replaces the store (the difference
is emitted as changes, so a relist after 410 neither loses a deletion nor keeps a ghost), then a
WATCH from the list's resourceVersion with bookmarks and a server-side timeout of 5 to 10 minutes.
An inactivity watchdog catches half-open connections the server timeout cannot. A 410 relists;
every other failure reconnects from the last resourceVersion after a jittered backoff.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import aiohttp
import structlog
from aiohttp.http_exceptions import HttpProcessingError

from kq import jsoncodec
from kq.runtime.backoff import Backoff
from kq.runtime.client import KubeClient, Query
from kq.runtime.errors import ApiError
from kq.runtime.resources import Resource
from kq.runtime.storage_version import to_model
from kq.runtime.store import Change, EventType, Object, Store

log = structlog.get_logger("kq.runtime.informer")

# Events over aiohttp's 2 MiB line buffer are read whole, and noted: they are rare and costly.
LARGE_EVENT = 2 * 1024 * 1024

Handler = Callable[[Change], None]
"""Called synchronously for every change; must be cheap (enqueue a key, update a cache)."""


@dataclass(frozen=True)
class InformerSettings:
    page_size: int = 500
    min_watch_timeout: int = 300
    max_watch_timeout: int = 600
    # Bookmarks come every minute on a quiet watch, so 80 s of silence means a dead connection.
    inactivity_timeout: float = 80.0
    reconnect_delay: float = 0.1
    backoff_initial: float = 0.8
    backoff_cap: float = 30.0


class Informer:
    """One kind, one store, many handlers; ``run`` until cancelled."""

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        settings: InformerSettings | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.store = Store()
        self._namespace = namespace
        self._selector = label_selector
        self._settings = settings or InformerSettings()
        self._handlers: list[Handler] = []
        self._synced = asyncio.Event()
        # Where the next watch resumes; None means the store must be relisted first.
        self._version: str | None = None
        self._log = log.bind(kind=resource.kind)

    @property
    def has_synced(self) -> bool:
        """True once the first LIST is in the store; readiness waits on every informer."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def add_handler(self, handler: Handler) -> None:
        """Subscribe; a handler added after sync is first told of every cached object."""
        self._handlers.append(handler)
        for obj in self.store.values():
            self._call(handler, Change(EventType.ADDED, obj, None))

    async def run(self) -> None:
        settings = self._settings
        backoff = Backoff(initial=settings.backoff_initial, cap=settings.backoff_cap)
        while True:
            try:
                if self._version is None:
                    await self._relist()
                await self._watch(backoff)
                await asyncio.sleep(settings.reconnect_delay)
            except ApiError as exc:
                if exc.expired:
                    self._log.info("resource version expired, relisting")
                    self._version = None
                    await asyncio.sleep(settings.reconnect_delay)
                    continue
                delay = backoff.next(exc.retry_after)
                self._log.warning("list/watch failed", error=str(exc), retry_in=round(delay, 2))
                await asyncio.sleep(delay)

    # -- list ---------------------------------------------------------------------------

    async def _relist(self) -> None:
        items: list[Object] = []
        token = ""
        while True:
            query = [*self._selector_query(), ("limit", str(self._settings.page_size))]
            if token:
                query.append(("continue", token))
            page = await self.client.list(self.resource, namespace=self._namespace, query=query)
            items.extend(self._typed(item) for item in page.get("items") or ())
            metadata = page.get("metadata", {})
            token = metadata.get("continue", "")
            if not token:
                version = str(metadata.get("resourceVersion", ""))
                break
        for change in self.store.replace(items):
            self._emit(change)
        self._version = version
        self._synced.set()

    # -- watch --------------------------------------------------------------------------

    async def _watch(self, backoff: Backoff) -> None:
        """Apply events until the stream ends, advancing the resume point with each one."""
        assert self._version is not None
        timeout = random.randint(self._settings.min_watch_timeout, self._settings.max_watch_timeout)
        query: Query = [
            *self._selector_query(),
            ("watch", "true"),
            ("resourceVersion", self._version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(timeout)),
        ]
        path = self.resource.path(self._namespace)
        async with self.client.stream(path, query) as lines:
            while (line := await self._next_line(lines)) is not None:
                if not line.strip():
                    continue
                if len(line) > LARGE_EVENT:
                    self._log.info("large watch event", bytes=len(line))
                self._apply(_decode_event(line))
                backoff.reset()

    async def _next_line(self, lines: AsyncIterator[bytes]) -> bytes | None:
        try:
            async with asyncio.timeout(self._settings.inactivity_timeout):
                return await anext(lines, None)
        except TimeoutError as exc:
            raise ApiError(0, "watch inactive: no event or bookmark in time") from exc
        except (
            aiohttp.ClientError,
            HttpProcessingError,
            ValueError,
        ) as exc:  # a reset, a bad reply
            raise ApiError(0, f"watch stream broken: {exc!r}") from exc

    def _apply(self, event: dict[str, object]) -> None:
        kind = event["type"]
        obj = event["object"]
        if not isinstance(obj, dict):
            raise ApiError(0, f"watch event without an object: {kind}")
        if kind == "ERROR":
            raise ApiError(
                int(obj.get("code") or 0),
                str(obj.get("message", "")),
                reason=str(obj.get("reason", "")),
                body=obj,
            )
        version = obj.get("metadata", {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self._version = version or self._version
            return
        if "name" not in obj.get("metadata", {}):
            raise ApiError(0, f"watch event {kind} without metadata.name")
        obj = self._typed(to_model(obj))
        if kind == "DELETED":
            self._emit(self.store.remove(obj))
        elif kind in ("ADDED", "MODIFIED"):
            self._emit(self.store.upsert(obj))
        else:
            raise ApiError(0, f"unknown watch event type {kind!r}")
        self._version = version or self._version

    def _emit(self, change: Change) -> None:
        for handler in self._handlers:
            self._call(handler, change)

    def _call(self, handler: Handler, change: Change) -> None:
        # One buggy subscriber must not stop the cache or the other subscribers.
        try:
            handler(change)
        except Exception:
            self._log.exception("informer handler failed", handler=repr(handler))

    def _typed(self, obj: Object) -> Object:
        # LIST items carry no kind/apiVersion; set them so every cached object is self-describing.
        obj.setdefault("kind", self.resource.kind)
        obj.setdefault("apiVersion", self.resource.api_version)
        # Nothing reads the field ownership from the cache, and it is a third of a Workload
        # from kube-apiserver (Kueue's caches drop it too). An update without it keeps it.
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
        return obj

    def _selector_query(self) -> list[tuple[str, str]]:
        return [("labelSelector", self._selector)] if self._selector else []


def _decode_event(line: bytes) -> dict[str, object]:
    """A watch event, or a transport error for anything else (an HTML 502 page, a cut line)."""
    try:
        event = jsoncodec.loads(line)
    except ValueError:
        event = None
    if not isinstance(event, dict) or "type" not in event or "object" not in event:
        raise ApiError(0, f"watch stream is not JSON events: {line[:80]!r}")
    return event
