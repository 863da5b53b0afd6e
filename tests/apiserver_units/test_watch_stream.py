"""A watch stream's bookmarks vouch only for what its client received: a client resumes from
the last revision it saw, so a bookmark past an unsent event would lose that event."""

from __future__ import annotations

import json
import time
from typing import Any, cast

from aiohttp import web

from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.selectors import parse_field_selector, parse_label_selector
from kq.sandbox.apiserver.store import Store
from kq.sandbox.apiserver.stream import EncodingCache, WatchStream
from kq.sandbox.apiserver.watch import Filter, Hub

EVERYTHING = Filter(None, parse_label_selector(""), parse_field_selector(""), lambda o: {})


class Sent:
    """The response side: every line written, decoded."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    async def write(self, data: bytes) -> None:
        for line in data.splitlines():
            event = json.loads(line)
            self.events.append((event["type"], int(event["object"]["metadata"]["resourceVersion"])))


class ConfigMaps:
    kind = "ConfigMap"
    api_version = "v1"


def cm(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}}


def stream_of(hub: Hub, sent: Sent) -> WatchStream:
    sub = hub.subscribe("configmaps", EVERYTHING, since=hub.published_rv)
    assert sub is not None
    return WatchStream(
        cast(web.StreamResponse, sent),
        sub,
        cast(ResourceType, ConfigMaps()),
        lambda obj: obj,
        lambda: hub.published_rv,
        EncodingCache(),
        bookmarks=True,
    )


async def test_events_queued_at_the_timeout_go_out_before_the_closing_bookmark() -> None:
    store = Store(None)
    hub = Hub(store)
    sent = Sent()
    stream = stream_of(hub, sent)
    for name in ("a", "b", "c"):
        store.put("configmaps", cm(name), None)
    await store.flushed()
    await stream.run(time.monotonic())  # the deadline has passed with three events queued
    assert [kind for kind, _ in sent.events] == ["ADDED", "ADDED", "ADDED", "BOOKMARK"]
    assert sent.events[-1][1] == sent.events[-2][1] == store.rv


async def test_a_bookmark_never_runs_ahead_of_what_was_published() -> None:
    store = Store(None)
    hub = Hub(store)
    store.put("configmaps", cm("a"), None)
    await store.flushed()
    sent = Sent()
    stream = stream_of(hub, sent)
    store.put("configmaps", cm("b"), None)  # written, not yet published to any watcher
    assert store.rv > hub.published_rv
    await stream.run(time.monotonic())
    assert sent.events == [("BOOKMARK", hub.published_rv)]
    assert hub.published_rv < store.rv
    await store.flushed()
    assert hub.published_rv == store.rv
