"""Nodes and Topologies into the cache; a change in what nodes can hold wakes parked workloads.

A kubelet heartbeat leaves the parsed Node as it was and costs one comparison. Hot-swap reads
failed nodes from the cache (``HotSwap.failed_nodes``), woken by the same change.
"""

from __future__ import annotations

from collections.abc import Callable

from kq.api.node import Node, parse_node
from kq.api.topology import Topology, parse_topology
from kq.cache.cache import Cache
from kq.runtime.store import Change, EventType
from kq.scheduler.scheduler import Scheduler


class TopologyFeed:
    def __init__(self, cache: Cache, scheduler: Scheduler, on_change: Callable[[], None]) -> None:
        self._cache = cache
        self._scheduler = scheduler
        self._on_change = on_change

    def node(self, change: Change) -> None:
        name = str(change.obj["metadata"]["name"])
        parsed = None if change.type is EventType.DELETED else parse_node(change.obj)
        node = parsed if isinstance(parsed, Node) else None
        before = self._cache.nodes.get(name)
        if node == before:
            return
        self._cache.set_node(name, node)
        # Capacity moved (either way): parked workloads may now fit, or need new words.
        self._scheduler.flavors_or_checks_changed()
        self._on_change()

    def topology(self, change: Change) -> None:
        name = str(change.obj["metadata"]["name"])
        parsed = None if change.type is EventType.DELETED else parse_topology(change.obj)
        self._cache.set_topology(name, parsed if isinstance(parsed, Topology) else None)
        self._scheduler.flavors_or_checks_changed()
        self._on_change()
