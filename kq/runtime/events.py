"""core/v1 Events about kq's objects: the reason/message pairs ``kubectl describe`` shows."""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from kq.observability import metrics
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.event_correlator import Correlator, Key, Series
from kq.runtime.resources import EVENTS

log = structlog.get_logger("kq.runtime.events")

NORMAL = "Normal"
WARNING = "Warning"
DROP_LOG_INTERVAL_S = 60.0
_OBJECT_KEYS = ("apiVersion", "kind", "namespace", "name", "uid")
Object = dict[str, Any]


def rfc3339_micro(moment: datetime | None = None) -> str:
    """UTC with microseconds and a ``Z``, the MicroTime format the API expects."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@functools.lru_cache(maxsize=4)
def _second_stamp(second: int) -> str:
    """Legacy (core/v1) events carry second-precision timestamps, like client-go's recorder;
    a burst of events shares its second's string."""
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_last_stamp = 0


def _stamp() -> int:
    """Nanoseconds since the epoch, rising within the process: as client-go names Events
    ``<object>.<hex nanoseconds>``, a list sorted by name is in the order they were made, which
    ``kubectl describe`` relies on for events of the same second."""
    global _last_stamp
    _last_stamp = max(time.time_ns(), _last_stamp + 1)
    return _last_stamp


class Drops:
    """Events never written, by reason, into ``kq_events_dropped_total``; a warning sums them
    up at most once per ``DROP_LOG_INTERVAL_S`` so a storm of drops is not a storm of logs."""

    def __init__(self) -> None:
        self._since: Counter[str] = Counter()
        self._logged = -DROP_LOG_INTERVAL_S

    def add(self, reason: str) -> None:
        metrics.events_dropped_total.labels(reason).inc()
        self._since[reason] += 1
        now = time.monotonic()
        if now - self._logged >= DROP_LOG_INTERVAL_S:
            log.warning("events dropped", interval_s=DROP_LOG_INTERVAL_S, **self._since)
            self._since.clear()
            self._logged = now


DROPS = Drops()


class EventRecorder:
    """Posts Events as ``component`` through client-go's correlator (``event_correlator``):
    repeats become one Event's count, similar ones one aggregate, floods are rate-limited.
    Failures are logged and counted, never raised into reconcilers."""

    def __init__(self, client: KubeClient, component: str = "kq", namespace: str = "default"):
        self._client = client
        self._component = component
        self._namespace = namespace
        self._correlator = Correlator()

    async def record(
        self,
        obj: dict[str, Any],
        event_type: str,
        reason: str,
        message: str,
        annotations: Mapping[str, str] | None = None,
    ) -> None:
        """``annotations``: on the Event itself (kq puts a decision's trace id there)."""
        meta = obj.get("metadata", {})
        involved = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        # The spam filter's key: client-go's, one bucket per source and object.
        source = (self._component, *(involved[k] for k in _OBJECT_KEYS))
        now = time.time()
        key, text = self._correlator.message((*source, event_type, reason), message[:1024], now)
        name = f"{involved['name'] or 'object'}.{_stamp():x}"
        series = self._correlator.observe(key, text, _second_stamp(int(now)), name)
        if annotations:
            series.annotations = dict(annotations)
        if series.busy:
            return  # the write in flight carries this occurrence too
        # Cluster-scoped objects' events go to the controller's own namespace, as upstream.
        namespace = involved["namespace"] or self._namespace
        head = {"involvedObject": involved, "type": event_type, "reason": reason}
        await self._write((key, source), series, namespace, head)

    async def _write(
        self, keys: tuple[Key, Key], series: Series, namespace: str, head: Object
    ) -> None:
        """Create the series' Event or PATCH its count, then once more for occurrences that
        arrived while the write was in flight (one write however many arrived)."""
        key, source = keys
        series.busy = True
        first = True
        try:
            while series.written < series.count:
                if not self._correlator.allow(source, time.time()):
                    if first:
                        DROPS.add("spam")
                    return  # later occurrences that get a token write the count
                first = False
                count = series.count
                await self._send(series, namespace, head)
                series.written = count
        except ApiError as exc:
            self._correlator.forget(key)
            DROPS.add("error")
            log.warning("event not recorded", reason=head["reason"], error=str(exc))
        finally:
            series.busy = False

    async def _send(self, series: Series, namespace: str, head: Object) -> None:
        if series.written:
            patch: Object = {
                "count": series.count,
                "lastTimestamp": series.last,
                "message": series.message,
            }
            if series.annotations:
                patch["metadata"] = {"annotations": series.annotations}
            await self._client.merge_patch(EVENTS, series.name, patch, namespace=namespace)
            return
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": series.name, "namespace": namespace},
            **head,
            "message": series.message,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": series.first,
            "lastTimestamp": series.last,
            "count": series.count,
        }
        if series.annotations:
            event["metadata"]["annotations"] = series.annotations
        await self._client.create(EVENTS, event)
