"""Cycles at one instant are bounded: a head that cannot be tried is not popped again.

The livelock this guards against: a BestEffortFIFO head that issued preemptions stays first
in its queue (the sticky preemptor); once it parked (no fit, no preemption candidates) it was
still popped first by every cycle. The engine (and ``kq run``'s admission loop, which has the
same rule) saw a parked head with untried workloads behind it, ran another cycle, and that
cycle popped the same parked head again: at one instant, for ever.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from kq.controllers.admission import AdmissionController
from kq.queue.requeue import RequeueReason
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Pending, Preempt, Victim
from kq.simulate.engine import Engine, Listener
from kq.simulate.run import prepare
from kq.simulate.setup import load_setup
from tests.core.world import World
from tests.simulate.helpers import FLAVOR, cluster_queue, job, local_queue, write_setup

PREEMPTION = {
    "withinClusterQueue": "LowerPriority",
    "reclaimWithinCohort": "Any",
    "borrowWithinCohort": {"policy": "LowerPriority"},
}


class TooManyCycles(AssertionError):
    pass


class Churn(Exception):
    """Cycles at one instant kept evicting: preemptions that undo each other."""


class Bounded(Listener):
    """Fails when more than ``bound`` cycles run at one instant since its last eviction (an
    eviction gives a later cycle something new; cycles with none must run out)."""

    def __init__(self, bound: int, churn: int) -> None:
        self.bound, self.churn = bound, churn
        self.at: float | None = None
        self.since_eviction = self.cycles = 0
        self.decisions: list[tuple[float, str, str]] = []

    def evicted(self, victim: Victim, preemptor: str, now: float) -> None:
        self.since_eviction = 0

    def cycled(self, result: CycleResult, now: float, seconds: float) -> None:
        if now != self.at:
            self.at, self.since_eviction, self.cycles = now, 0, 0
        self.since_eviction += 1
        self.cycles += 1
        if self.cycles > self.churn:
            raise Churn(f"{self.cycles} cycles at {now}")
        for d in result.decisions:
            kind = d.requeue.name if isinstance(d, Pending) else type(d).__name__
            self.decisions.append((now, d.key.removeprefix("default/"), kind))
        if self.since_eviction > self.bound:
            raise TooManyCycles(f"{self.since_eviction} cycles at {now}: {result.decisions}")


def run_bounded(
    objects: list[dict[str, Any]], trace: list[dict[str, Any]], bound: int, churn: int = 1000
) -> Bounded:
    with tempfile.TemporaryDirectory() as tmp:
        setup = write_setup(Path(tmp) / "setup.yaml", *objects)
        prepared = prepare("p", load_setup([setup]), trace)
    listener = Bounded(bound, churn)
    Engine(prepared.core.scheduler, prepared.arrivals, listener).run()
    return listener


def test_a_parked_sticky_preemptor_lets_its_queue_move_on() -> None:
    # a (2 cpu) and b (3 cpu) share a cohort; low holds 4 in a, 2 of them b's. At 1, b0 takes
    # 1 of b's and high preempts low; then b1 (not borrowing) takes b's last 2 before high
    # (borrowing), so high no longer fits. At 2 (b0 finishes) high, still the sticky
    # preemptor, finds nobody to preempt and parks; low waits behind it, untried.
    a = cluster_queue("a", 2, cohort="c", preemption=PREEMPTION)
    b = cluster_queue("b", 3, cohort="c")
    trace = [
        job("low", 0, "a", 4, 100, priority=0),
        job("high", 1, "a", 4, 100, priority=2),
        job("b0", 1, "b", 1, 1, priority=3),
        job("b1", 1, "b", 2, 100, priority=2),
    ]
    listener = run_bounded([FLAVOR, a, b, local_queue("a"), local_queue("b")], trace, bound=5)
    # Before the fix: high popped again and again at 2 (TooManyCycles); now low is tried.
    assert [d for d in listener.decisions if d[0] == 2.0] == [
        (2.0, "high", "PREEMPTION_NO_CANDIDATES"),
        (2.0, "low", "PREEMPTION_NO_CANDIDATES"),
    ]
    # b1 finishes at 101: high, sticky still, goes first; low once high is done.
    assert [d for d in listener.decisions if d[0] > 2.0] == [
        (101.0, "high", "Admit"),
        (101.0, "low", "PREEMPTION_NO_CANDIDATES"),
        (201.0, "low", "Admit"),
    ]


def test_kq_runs_loop_rule_runs_out_on_the_same_case() -> None:
    """``kq run`` asks ``AdmissionController._untried_heads`` whether to wake for another
    cycle at once; before the fix it said yes for ever here (a busy loop on one core)."""
    world = World()
    world.flavor("f")
    world.cluster_queue("a", [{"f": {"cpu": 2}}], cohort="c", preemption=PREEMPTION)
    world.cluster_queue("b", [{"f": {"cpu": 3}}], cohort="c")
    world.local_queue("ns", "a", "a")
    world.local_queue("ns", "b", "b")
    low = world.submit("low", "a", {"cpu": 4}, namespace="ns")
    assert [d.key for d in world.cycle().decisions] == [low]
    high = world.submit("high", "a", {"cpu": 4}, namespace="ns", priority=2)
    b0 = world.submit("b0", "b", {"cpu": 1}, namespace="ns", priority=3)
    b1 = world.submit("b1", "b", {"cpu": 2}, namespace="ns", priority=2)
    preempted = world.cycle().by_key[high]
    assert isinstance(preempted, Preempt)
    assert [v.key for v in preempted.victims] == [low]
    world.complete_eviction(low)
    assert isinstance(world.cycle().by_key[b1], Admit)
    world.finish(b0)
    rule = SimpleNamespace(feed=SimpleNamespace(queues=world.queues))
    tried = []
    for _ in range(10):
        result = world.cycle()
        tried += [d.key for d in result.decisions]
        if not AdmissionController._untried_heads(rule, result):  # type: ignore[arg-type]
            break
    else:
        raise TooManyCycles(f"still waking after {tried}")
    assert tried == [high, low]
    assert world.queues.queues["a"].sticky == high  # first again once something is released


def test_the_sticky_preemptor_waits_while_its_shape_is_parked() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("a", [{"f": {"cpu": 2}}], preemption=PREEMPTION)
    world.local_queue("ns", "a", "a")
    queue = world.queues
    sticky = world.submit("sticky", "a", {"cpu": 2}, namespace="ns", priority=1)
    other = world.submit("other", "a", {"cpu": 1}, namespace="ns")
    (head,) = queue.heads()
    assert head.key == sticky
    queue.requeue(head, RequeueReason.PENDING_PREEMPTION)
    (head,) = queue.heads()
    assert head.key == sticky
    queue.requeue(head, RequeueReason.PREEMPTION_NO_CANDIDATES)
    assert [h.key for h in queue.heads()] == [other]
    queue.requeue_inadmissible(["a"])
    assert [h.key for h in queue.heads()] == [sticky]


FLAVORS = ("f0", "f1")


@st.composite
def setups(draw: st.DrawFn) -> list[dict[str, Any]]:
    """2 to 4 ClusterQueues in one cohort, two flavors of cpu, random quotas and policies."""
    objects: list[dict[str, Any]] = [{**FLAVOR, "metadata": {"name": f}} for f in FLAVORS]
    for i in range(draw(st.integers(2, 4))):
        flavors = []
        for f in FLAVORS:
            quota: dict[str, Any] = {"name": "cpu", "nominalQuota": draw(st.integers(0, 6))}
            borrowing = draw(st.none() | st.integers(0, 3))
            if borrowing is not None:
                quota["borrowingLimit"] = borrowing
            flavors.append({"name": f, "resources": [quota]})
        reclaim = draw(st.sampled_from(["Never", "Any", "LowerPriority"]))
        preemption: dict[str, Any] = {
            "withinClusterQueue": draw(
                st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
            ),
            "reclaimWithinCohort": reclaim,
        }
        if reclaim != "Never" and draw(st.booleans()):
            preemption["borrowWithinCohort"] = {"policy": "LowerPriority"}
        name = f"q{i}"
        spec = {
            "namespaceSelector": {},
            "cohort": "c",
            "queueingStrategy": draw(st.sampled_from(["BestEffortFIFO", "StrictFIFO"])),
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
            "preemption": preemption,
            "flavorFungibility": {
                "whenCanBorrow": draw(st.sampled_from(["Borrow", "TryNextFlavor"])),
                "whenCanPreempt": draw(st.sampled_from(["Preempt", "TryNextFlavor"])),
            },
        }
        objects += [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
             "metadata": {"name": name}, "spec": spec},
            local_queue(name),
        ]  # fmt: skip
    return objects


def traces(queues: int) -> st.SearchStrategy[list[dict[str, Any]]]:
    entry = st.fixed_dictionaries(
        {
            "arrival": st.integers(0, 6),
            "queue": st.sampled_from([f"default/q{i}" for i in range(queues)]),
            "runtime": st.integers(1, 8),
            "priority": st.integers(0, 3),
            "count": st.integers(1, 2),
            "requests": st.fixed_dictionaries({"cpu": st.integers(1, 4)}),
        }
    )
    return st.lists(entry, min_size=10, max_size=40)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_cycles_without_evictions_at_one_instant_are_bounded(data: st.DataObject) -> None:
    """Each cycle that evicts nobody and is followed by another one admits or parks a head,
    or pops a head no cycle of this instant popped since: so, between evictions, at most
    about one cycle per pending workload (plus the last, which decides nothing new)."""
    objects = data.draw(setups())
    trace = data.draw(traces(sum(o["kind"] == "ClusterQueue" for o in objects)))
    for i, entry in enumerate(trace):
        entry["name"] = f"w{i}"
    try:
        listener = run_bounded(objects, trace, bound=2 * len(trace) + 2, churn=50 * len(trace))
    except Churn:
        # Preemptions that undo each other at one instant (known, not this bound's subject).
        event("preemption churn")
        reject()
    assert listener.decisions  # something was decided, so the bound was looked at
