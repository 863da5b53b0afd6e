"""Whose pending queues the visibility API reads on this replica.

The leader's admission controller owns the authoritative queues, and they are read while this
replica leads. A follower has no admission controller, and the Service in front of the
replicas sends requests to either; like upstream, which serves from every replica's cache, a
follower answers from queues of its own, built on its first visibility request from the
informers every replica runs, through the same ``CoreFeed``. Its order is the leader's heap
order (priority, queue time, UID); what only the leader's cycles know, the sticky preemptor,
is missing. Once this replica leads, the follower's queues are dropped (a replica that loses
its lease exits, so it never needs them again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kq.controllers.admission import feed_handlers
from kq.controllers.feed import CoreFeed
from kq.queue.manager import QueueManager
from kq.runtime.informer import Informer
from kq.runtime.resources import (
    WORKLOADS,
    Resource,
)
from kq.runtime.store import Change
from kq.scheduler.plugins import AdmissionPlugins
from kq.scheduler.scheduler import Scheduler


class VisibleQueues:
    def __init__(
        self,
        informers: Mapping[Resource, Informer],
        plugins: AdmissionPlugins,
        eviction_timestamp: bool,
    ) -> None:
        """``informers``: those of the admission controller (``WATCHED``), specs first."""
        self._informers = informers
        self._plugins = plugins
        self._eviction_timestamp = eviction_timestamp
        self._leader: CoreFeed | None = None
        self._follower: CoreFeed | None = None

    def lead(self, feed: CoreFeed) -> None:
        """The admission controller of this replica started: read its queues from now on."""
        self._leader = feed
        self._follower = None

    def retry_vetoed(self) -> None:
        """A veto plugin may let parked heads in now: put them back and wake the scheduler."""
        if self._leader is not None:
            self._leader.queues.requeue_inadmissible(list(self._leader.queues.queues))
            self._leader.changed()

    def queues(self) -> QueueManager | None:
        if self._leader is not None:
            return self._leader.queues
        if self._follower is None:
            self._follow()
        assert self._follower is not None
        return self._follower.queues

    def scheduler(self) -> Scheduler | None:
        """The leading admission controller's scheduler; ``None`` on a follower."""
        return None if self._leader is None else self._leader.scheduler

    def raw(self, key: str) -> dict[str, object] | None:
        """The stored Workload ``namespace/name``."""
        return self._informers[WORKLOADS].store.get(key)

    def _follow(self) -> None:
        """Build the follower's queues: subscribing replays every store into them."""
        feed = CoreFeed(
            self._plugins,
            self._informers[WORKLOADS].store.values,
            _nothing,
            self._eviction_timestamp,
        )
        self._follower = feed
        for resource, handler in feed_handlers(feed).items():
            self._informers[resource].add_handler(self._while_following(feed, handler))

    def _while_following(
        self, feed: CoreFeed, handler: Callable[[Change], None]
    ) -> Callable[[Change], None]:
        def forward(change: Change) -> None:
            if self._follower is feed:
                handler(change)

        return forward


def _nothing() -> None:
    """A follower runs no cycles: a change needs nothing woken."""
