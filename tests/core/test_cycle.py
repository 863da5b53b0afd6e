"""The cycle: fungibility, nomination failures, messages, vetoes and traces."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from kq.api.clusterqueue import ClusterQueue
from kq.scheduler import cycle
from kq.scheduler.decisions import Admit
from kq.scheduler.status import active_condition
from kq.workload.info import WorkloadInfo
from tests.core.world import World, pending, preempt


def two_flavors(**spec: Any) -> World:
    world = World()
    world.flavor("one")
    world.flavor("two")
    world.cluster_queue("q", [{"one": {"cpu": 2}, "two": {"cpu": 2}}], cohort="c", **spec)
    world.cluster_queue("other", [{"one": {"cpu": 0}, "two": {"cpu": 0}}], cohort="c")
    world.local_queue("default", "q", "q")
    world.local_queue("other", "q", "other")
    return world


def test_default_fungibility_prefers_a_fit_over_preempting() -> None:
    world = two_flavors(preemption={"withinClusterQueue": "LowerPriority"})
    world.submit("low", "q", {"cpu": 2}, priority=0)
    world.cycle()
    high = world.submit("high", "q", {"cpu": 2}, priority=10)
    world.cycle()
    assert world.admission(high) == {"main": {"cpu": "two"}}


def test_may_stop_search_preempts_on_the_first_flavor() -> None:
    spec = {
        "preemption": {"withinClusterQueue": "LowerPriority"},
        "flavorFungibility": {"whenCanPreempt": "MayStopSearch"},
    }
    world = two_flavors(**spec)
    low = world.submit("low", "q", {"cpu": 2}, priority=0)
    world.cycle()
    high = world.submit("high", "q", {"cpu": 2}, priority=10)
    assert [v.key for v in preempt(world.cycle(), high).victims] == [low]


def test_may_stop_search_without_candidates_falls_through() -> None:
    spec = {
        "preemption": {"withinClusterQueue": "LowerPriority"},
        "flavorFungibility": {"whenCanPreempt": "MayStopSearch"},
    }
    world = two_flavors(**spec)
    world.submit("first", "q", {"cpu": 2}, priority=5)
    world.cycle()
    same = world.submit("same", "q", {"cpu": 2}, priority=5)
    world.cycle()
    assert world.admission(same) == {"main": {"cpu": "two"}}


def test_may_stop_search_reclaims_a_borrower_on_the_first_flavor() -> None:
    spec = {
        "preemption": {"reclaimWithinCohort": "Any"},
        "flavorFungibility": {"whenCanPreempt": "MayStopSearch"},
    }
    world = two_flavors(**spec)
    borrower = world.submit("borrower", "q", {"cpu": 2}, namespace="other")
    world.cycle()
    mine = world.submit("mine", "q", {"cpu": 2})
    decision = preempt(world.cycle(), mine)
    assert [(v.key, v.reason) for v in decision.victims] == [(borrower, "InCohortReclamation")]


def test_the_first_pod_set_without_a_flavor_ends_the_assignment() -> None:
    world = two_flavors()
    key = world.submit(
        "w",
        "q",
        pod_sets=[
            World.pod_set("driver", {"cpu": 1, "example.com/fpga": 1}),
            World.pod_set("workers", {"cpu": 3}, count=2),
        ],
    )
    decision = pending(world.cycle(), key)
    assert decision.message == (
        "couldn't assign flavors to pod set driver: resource example.com/fpga unavailable in "
        "ClusterQueue"
    )
    assert decision.reason == "NoMatchingFlavor"


def test_exceeding_every_flavor_reports_each_and_exceeds_max_quota() -> None:
    world = two_flavors()
    key = world.submit(
        "w",
        "q",
        pod_sets=[
            World.pod_set("driver", {"cpu": 1}),
            World.pod_set("workers", {"cpu": 3}, count=2),
        ],
    )
    decision = pending(world.cycle(), key)
    assert decision.message == (
        "couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor one, "
        "previously considered podsets requests (1) + current podset request (6) > maximum "
        "capacity (2), insufficient quota for cpu in flavor two, previously considered podsets "
        "requests (0) + current podset request (6) > maximum capacity (2)"
    )
    assert decision.reason == "ExceedsMaxQuota"


def test_the_mildest_flavor_reason_wins_within_a_group() -> None:
    world = World()
    world.flavor("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    world.flavor("small")
    world.cluster_queue("q", [{"tainted": {"cpu": 8}, "small": {"cpu": 4}}])
    world.local_queue("default", "q", "q")
    key = world.submit("big", "q", {"cpu": 5})
    decision = pending(world.cycle(), key)
    assert decision.reason == "ExceedsMaxQuota"  # milder than the taint's NoMatchingFlavor
    assert decision.message == (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor small, "
        "previously considered podsets requests (0) + current podset request (5) > maximum "
        "capacity (4), untolerated taint k=v:NoSchedule in flavor tainted"
    )


def test_earlier_pod_sets_count_against_later_ones() -> None:
    world = two_flavors()
    key = world.submit(
        "jobset",
        "q",
        pod_sets=[World.pod_set("rjob-1", {"cpu": 1}), World.pod_set("rjob-2", {"cpu": 2})],
    )
    world.cycle()
    assert world.admission(key) == {"rjob-1": {"cpu": "one"}, "rjob-2": {"cpu": "two"}}


def test_namespace_selector_mismatch_and_inactive_queue() -> None:
    world = two_flavors()
    world.cluster_queue(
        "picky", [{"one": {"cpu": 1}}], namespaceSelector={"matchLabels": {"team": "a"}}
    )
    world.cluster_queue("broken", [{"ghost": {"cpu": 1}}])
    world.local_queue("default", "picky", "picky")
    world.local_queue("default", "broken", "broken")
    picky = world.submit("picky", "picky", {"cpu": 1})
    broken = world.submit("broken", "broken", {"cpu": 1})
    result = world.cycle()
    decision = pending(result, picky)
    assert decision.message == "workload namespace doesn't match ClusterQueue selector"
    assert broken not in result.by_key  # inactive queues have no head this cycle
    assert active_condition(world.cache, "broken") == {
        "type": "Active",
        "status": "False",
        "reason": "FlavorNotFound",
        "message": "Can't admit new workloads: references missing ResourceFlavor(s): ghost.",
    }
    world.flavor("ghost")
    assert isinstance(world.cycle().by_key[broken], Admit)
    assert active_condition(world.cache, "broken")["reason"] == "Ready"


def test_a_veto_keeps_the_workload_pending_with_its_reason() -> None:
    world = two_flavors()

    def veto(info: WorkloadInfo, cq: ClusterQueue) -> str | None:
        return "over the team budget" if info.obj.name == "spendy" else None

    world.scheduler.plugins = replace(world.scheduler.plugins, veto=veto)
    spendy = world.submit("spendy", "q", {"cpu": 1})
    decision = pending(world.cycle(), spendy)
    assert (decision.reason, decision.message) == ("Vetoed", "over the team budget")


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """A private provider, so the global (no-op) one is left alone."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(cycle, "tracer", provider.get_tracer("kq.scheduler"))
    return exporter


def test_spans_explain_each_decision(spans: InMemorySpanExporter) -> None:
    world = two_flavors()
    world.submit("fits", "q", {"cpu": 2})
    world.cycle()
    stuck = world.submit("stuck", "q", {"cpu": 3})
    world.cycle()
    finished = {s.name: s for s in spans.get_finished_spans() if s.attributes}
    decision = finished["kq.admission.decision"].attributes
    assert decision is not None
    assert decision["kueue.workload"] == stuck
    assert decision["kueue.result"] == "pending"
    assert decision["kueue.cluster_queue"] == "q"
    assert decision["kueue.flavors_tried"] == (
        "main/one: NO_FIT (insufficient quota for cpu in flavor one, previously considered "
        "podsets requests (0) + current podset request (3) > maximum capacity (2))",
        "main/two: NO_FIT (insufficient quota for cpu in flavor two, previously considered "
        "podsets requests (0) + current podset request (3) > maximum capacity (2))",
    )
    assert finished["kq.scheduler.cycle"].attributes == {"kueue.heads": 1, "kueue.admitted": 0}


def test_a_queue_covering_pods_counts_one_per_pod() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("q", [{"f": {"cpu": 10, "pods": 3}}])
    world.local_queue("default", "q", "q")
    fits = world.submit("three", "q", {"cpu": 1}, count=3)
    too_many = world.submit("one-more", "q", {"cpu": 1})
    world.run(2)
    assert world.admitted() == {fits}
    cached = world.cache.workload(fits)
    assert cached is not None
    assert dict(cached.info.usage) == {("f", "cpu"): 3000, ("f", "pods"): 3}
    assert too_many not in world.admitted()
