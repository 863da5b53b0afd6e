"""Informer changes into the core, without an API server."""

from __future__ import annotations

from typing import Any

from kq.controllers.feed import CoreFeed
from kq.runtime.store import Change, EventType, Store
from kq.scheduler.decisions import Admit
from tests.controllers.helpers import (
    WPC_SOURCE,
    cluster_queue,
    flavor,
    local_queue,
    priority_class,
    workload,
)
from tests.core.world import plugins


class Fed:
    def __init__(self) -> None:
        self.workloads = Store()
        self.changes = 0
        self.feed = CoreFeed(plugins(), self.workloads.values, self._changed)

    def _changed(self) -> None:
        self.changes += 1

    def add_workload(self, obj: dict[str, Any]) -> None:
        obj["metadata"].setdefault("resourceVersion", "1")
        obj["metadata"].setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        self.feed.workload(self.workloads.upsert(obj))


def added(obj: dict[str, Any]) -> Change:
    return Change(EventType.ADDED, obj, None)


def test_a_class_without_value_gives_the_workload_its_priority() -> None:
    fed = Fed()
    fed.feed.workload_priority_class(added(priority_class("high", 100)))
    fed.feed.resource_flavor(added(flavor("rf")))
    fed.feed.cluster_queue(added(cluster_queue("cq", "rf", "cpu", 1)))
    fed.feed.local_queue(added(local_queue("ns", "lq", "cq")))
    fed.feed.namespace(added({"metadata": {"name": "ns", "labels": {}}}))
    fed.add_workload(workload("ns", "low", "lq", {"cpu": 1}, priority=1))
    fed.add_workload(
        workload(
            "ns", "high", "lq", {"cpu": 1}, priorityClassName="high", priorityClassSource=WPC_SOURCE
        )
    )
    result = fed.feed.scheduler.run_cycle(0.0)
    assert [type(d) for d in result.decisions] == [Admit]
    assert result.decisions[0].key == "ns/high"
    assert fed.changes == 7


def test_missing_queues_are_reported_and_retried_when_they_appear() -> None:
    fed = Fed()
    fed.feed.namespace(added({"metadata": {"name": "ns", "labels": {}}}))
    fed.add_workload(workload("ns", "w", "lq", {"cpu": 1}))
    assert fed.feed.unqueueable == {"ns/w": "LocalQueue lq doesn't exist"}
    fed.feed.local_queue(added(local_queue("ns", "lq", "cq")))
    assert fed.feed.unqueueable == {"ns/w": "ClusterQueue cq doesn't exist"}
    fed.feed.cluster_queue(added(cluster_queue("cq", "rf", "cpu", 1)))
    assert fed.feed.unqueueable == {}
    assert fed.feed.inactive_pending() == {"ns/w": "ClusterQueue cq is inactive"}
    fed.feed.resource_flavor(added(flavor("rf")))
    assert fed.feed.inactive_pending() == {}
    decision = fed.feed.scheduler.run_cycle(0.0).decisions[0]
    assert isinstance(decision, Admit)


def test_an_invalid_cluster_queue_is_remembered_with_its_reason() -> None:
    fed = Fed()
    bad = cluster_queue("cq", "rf", "cpu", 1)
    bad["spec"]["queueingStrategy"] = "Random"
    fed.feed.cluster_queue(added(bad))
    assert set(fed.feed.invalid_cluster_queues) == {"cq"}
    assert "cq" not in fed.feed.cache.cluster_queues
    fed.feed.cluster_queue(Change(EventType.DELETED, bad, None))
    assert fed.feed.invalid_cluster_queues == {}


def test_evicted_bare_workloads_are_marked_for_release() -> None:
    fed = Fed()
    # An admission kq could have made: its queues exist and it matches them (kq.scheduler.trust).
    fed.feed.resource_flavor(added(flavor("rf")))
    fed.feed.cluster_queue(added(cluster_queue("cq", "rf", "cpu", 1)))
    fed.feed.local_queue(added(local_queue("ns", "lq", "cq")))
    obj = workload("ns", "w", "lq", {"cpu": 1})
    psa = {"name": "main", "flavors": {"cpu": "rf"}, "resourceUsage": {"cpu": "1"}, "count": 1}
    obj["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [psa]},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Evicted", "status": "True", "reason": "Preempted"},
        ],
    }
    fed.add_workload(obj)
    assert fed.feed.to_release == {"ns/w"}
    assert fed.feed.to_distrust == set()
    assert fed.feed.cache.holds_quota("ns/w")
    fed.feed.workload(Change(EventType.DELETED, obj, None))
    assert fed.feed.to_release == set()
    assert not fed.feed.cache.holds_quota("ns/w")


def test_an_admission_found_before_its_queue_is_judged_again_when_it_arrives() -> None:
    # At start-up informers deliver in any order: a Workload may come before its LocalQueue.
    fed = Fed()
    fed.feed.resource_flavor(added(flavor("rf")))
    fed.feed.cluster_queue(added(cluster_queue("cq", "rf", "cpu", 1)))
    obj = workload("ns", "w", "lq", {"cpu": 1})
    psa = {"name": "main", "flavors": {"cpu": "rf"}, "resourceUsage": {"cpu": "1"}, "count": 1}
    obj["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [psa]},
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}],
    }
    fed.add_workload(obj)
    assert not fed.feed.cache.holds_quota("ns/w")
    assert fed.feed.to_distrust == {"ns/w"}
    fed.feed.local_queue(added(local_queue("ns", "lq", "cq")))
    assert fed.feed.cache.holds_quota("ns/w")
    assert fed.feed.to_distrust == set()
