"""Which Events reach the server, and as what: client-go's correlator, in kq's terms (pure).

Three steps, in client-go's order, for each Event a controller records:

1. *Aggregation*: events alike but for their message (same source, object, type and reason)
   are kept apart until ``AGGREGATE_AFTER`` distinct messages arrived within
   ``AGGREGATE_WINDOW_S``; later ones become one Event whose message is the latest, prefixed
   ``AGGREGATED_PREFIX``.
2. *Series*: an Event identical to one already written is not posted again; the first one's
   ``count`` and ``lastTimestamp`` move instead (a PATCH).
3. *Spam filter*: every write about one object from one source takes a token from that
   pair's bucket (``SPAM_BURST``, refilled at ``SPAM_QPS``); without one the write is skipped.

Caches are bounded LRUs of ``CACHE_SIZE`` keys, as client-go's, so memory stays flat however
many objects pass through.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Generic, TypeVar

# client-go's defaults (tools/record/events_cache.go), so kq's Events read like Kueue's.
CACHE_SIZE = 4096
AGGREGATE_AFTER = 10
AGGREGATE_WINDOW_S = 600.0
AGGREGATED_PREFIX = "(combined from similar events): "
SPAM_BURST = 25
SPAM_QPS = 1 / 300

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """A dictionary that forgets its least recently used key beyond ``size`` keys."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def pop(self, key: K) -> None:
        self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class Bucket:
    """A token bucket that starts full."""

    tokens: float
    at: float

    def take(self, now: float, burst: float, qps: float) -> bool:
        self.tokens = min(burst, self.tokens + (now - self.at) * qps)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass
class Series:
    """One Event on the server and the occurrences it stands for."""

    name: str
    message: str
    first: str
    last: str
    count: int = 1
    written: int = 0
    """The count the server holds (0: not created yet)."""
    busy: bool = False
    """A write for it is in flight; whoever started it writes what arrived meanwhile."""
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class _Similar:
    messages: set[str]
    since: float


Key = tuple[str, ...]


class Correlator:
    """Aggregation, series and the spam filter over one recorder's Events (see module)."""

    def __init__(self, burst: float = SPAM_BURST, qps: float = SPAM_QPS) -> None:
        self._burst = burst
        self._qps = qps
        self._similar: Lru[Key, _Similar] = Lru()
        self._series: Lru[Key, Series] = Lru()
        self._buckets: Lru[Key, Bucket] = Lru()

    def message(self, similar: Key, message: str, now: float) -> tuple[Key, str]:
        """The series key and message this occurrence is recorded under."""
        seen = self._similar.get(similar)
        if seen is None or now - seen.since > AGGREGATE_WINDOW_S:
            seen = _Similar(set(), now)
            self._similar.put(similar, seen)
        seen.messages.add(message)
        if len(seen.messages) < AGGREGATE_AFTER:
            return (*similar, message), message
        return similar, AGGREGATED_PREFIX + message

    def observe(self, key: Key, message: str, stamp: str, new_name: str) -> Series:
        """The series this occurrence joins (``count`` moved), or a new one named ``new_name``."""
        series = self._series.get(key)
        if series is None:
            series = Series(new_name, message, stamp, stamp)
            self._series.put(key, series)
            return series
        series.count += 1
        series.message = message
        series.last = stamp
        return series

    def forget(self, key: Key) -> None:
        """The server lost the series (or never got it): the next occurrence starts anew."""
        self._series.pop(key)

    def allow(self, source: Key, now: float) -> bool:
        """Whether a write about this source and object may go now (spam filter)."""
        bucket = self._buckets.get(source)
        if bucket is None:
            bucket = Bucket(self._burst, now)
            self._buckets.put(source, bucket)
        return bucket.take(now, self._burst, self._qps)
