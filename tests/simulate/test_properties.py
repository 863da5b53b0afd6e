"""Invariants of any simulation: no admitted usage over quota at any simulated instant, no
workload holding quota twice or lost."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Victim
from kq.simulate.engine import Engine, Listener
from kq.simulate.model import Core
from kq.simulate.run import prepare
from kq.simulate.setup import load_setup
from tests.simulate.helpers import FLAVOR, cluster_queue, local_queue, write_setup, write_trace

QUEUES = ("q0", "q1", "q2")


@st.composite
def cluster_queues(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for name in QUEUES[: draw(st.integers(1, 3))]:
        nominal = draw(st.integers(0, 8))
        out.append(
            cluster_queue(
                name,
                nominal,
                cohort="c",
                borrowingLimit=draw(st.none() | st.integers(0, 4)),
                lendingLimit=draw(st.none() | st.integers(0, nominal)),
                queueingStrategy=draw(st.sampled_from(["BestEffortFIFO", "StrictFIFO"])),
                preemption={
                    "withinClusterQueue": draw(st.sampled_from(["Never", *["LowerPriority"] * 3])),
                    "reclaimWithinCohort": draw(
                        st.sampled_from(["Never", "Any", "LowerPriority"] * 2)
                    ),
                },
            )
        )
    return out


def workloads(queues: int) -> st.SearchStrategy[list[dict[str, Any]]]:
    entry = st.fixed_dictionaries(
        {
            "arrival": st.integers(0, 8),
            "queue": st.sampled_from([f"default/{q}" for q in QUEUES[:queues]]),
            "runtime": st.integers(1, 10),
            "priority": st.integers(0, 3),
            "count": st.integers(1, 2),
            "requests": st.fixed_dictionaries({"cpu": st.integers(1, 5)}),
        }
    )
    return st.lists(entry, min_size=4, max_size=16)


class Checker(Listener):
    """After every cycle: usage within quota, and quota holders exactly the running ones."""

    def __init__(self, core: Core, engine: Engine) -> None:
        self.core, self.engine = core, engine
        self.admissions = self.evictions = self.finishes = 0

    def admitted(self, decision: Admit, now: float) -> None:
        self.admissions += 1

    def evicted(self, victim: Victim, preemptor: str, now: float) -> None:
        self.evictions += 1

    def finished(self, key: str, now: float) -> None:
        self.finishes += 1

    def cycled(self, result: CycleResult, now: float, seconds: float) -> None:
        cache = self.core.cache
        pooled = lendable = 0
        for name, cq in cache.cluster_queues.items():
            quota = cq.quotas[("default", "cpu")]
            used = cache.usage_of(name).get(("default", "cpu"), 0)
            if quota.borrowing_limit is not None:
                assert used <= quota.nominal + quota.borrowing_limit, (name, used)
            lends = quota.nominal if quota.lending_limit is None else quota.lending_limit
            pooled += max(0, used - (quota.nominal - lends))  # what exceeds what it keeps
            lendable += lends
        assert pooled <= lendable, (pooled, lendable)
        holders = {key for cq in cache.cluster_queues for key in cache.workloads_in(cq)}
        assert holders == self.engine.running
        for key in holders:
            queue = self.core.queues.queues[cache.workload(key).info.cluster_queue]  # type: ignore[union-attr]
            assert not queue.contains(key), f"{key} holds quota and is pending"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_quota_never_exceeded_and_nothing_lost(data: st.DataObject) -> None:
    queues = data.draw(cluster_queues())
    trace = data.draw(workloads(len(queues)))
    for i, entry in enumerate(trace):
        entry["name"] = f"w{i}"
    with tempfile.TemporaryDirectory() as tmp:
        objects = [FLAVOR, *queues, *(local_queue(q["metadata"]["name"]) for q in queues)]
        setup = write_setup(Path(tmp) / "setup.yaml", *objects)
        prepared = prepare("p", load_setup([setup]), write_trace(Path(tmp) / "t.yaml", trace))
    engine = Engine(prepared.core.scheduler, prepared.arrivals)
    checker = Checker(prepared.core, engine)
    engine.listener = checker
    engine.run()
    event("with preemptions" if checker.evictions else "without preemptions")
    # None lost: each workload finished, or is pending in its queue at the end.
    for key in engine.arrivals:
        if key in engine.done:
            continue
        assert key not in engine.running
        assert any(q.contains(key) for q in prepared.core.queues.queues.values()), key
    assert checker.admissions == checker.finishes + checker.evictions
    assert checker.finishes == len(engine.done)
