"""core/v1 Events about kq's objects: the reason/message pairs ``kubectl describe`` shows."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import EVENTS

log = structlog.get_logger("kq.runtime.events")

NORMAL = "Normal"
WARNING = "Warning"


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


class EventRecorder:
    """Posts Events as ``component``; failures are logged, never raised into reconcilers."""

    def __init__(self, client: KubeClient, component: str = "kq", namespace: str = "default"):
        self._client = client
        self._component = component
        self._namespace = namespace

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
        # Cluster-scoped objects' events go to the controller's own namespace, as upstream.
        namespace = meta.get("namespace") or self._namespace
        now = _second_stamp(int(time.time()))
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.get('name', 'object')}.{_stamp():x}",
                "namespace": namespace,
            },
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "name": meta.get("name", ""),
                "namespace": meta.get("namespace", ""),
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
            "type": event_type,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        if annotations:
            event["metadata"]["annotations"] = dict(annotations)
        try:
            await self._client.create(EVENTS, event)
        except ApiError as exc:
            log.warning("event not recorded", reason=reason, error=str(exc))
