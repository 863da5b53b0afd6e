"""Words for workloads held behind a StrictFIFO head that cannot fit (``kq.scheduler.held``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kq.api.conditions import Condition
from kq.scheduler.held import held_words
from tests.core.world import World

GPU = "nvidia.com/gpu"
HELD = (
    "Workload is pending evaluation in the scheduling queue: it waits behind team-a/gpu-head, "
    "the head of StrictFIFO ClusterQueue team-a-cq, which does not fit"
)


def world(strategy: str) -> World:
    out = World()
    out.flavor("default")
    out.cluster_queue("team-a-cq", [{"default": {"cpu": 10, GPU: 4}}], queueingStrategy=strategy)
    out.local_queue("team-a", "team-a", "team-a-cq")
    return out


def blocked(strategy: str) -> tuple[World, str, str]:
    """A GPU holder admitted, then a GPU head that cannot fit and a CPU-only job behind it."""
    out = world(strategy)
    out.submit("holder", "team-a", {GPU: 4}, namespace="team-a")
    out.cycle()
    head = out.submit("gpu-head", "team-a", {GPU: 4}, namespace="team-a")
    cpu_only = out.submit("cpu-only", "team-a", {"cpu": 1}, namespace="team-a")
    return out, head, cpu_only


def test_a_workload_behind_a_strict_fifo_head_that_cannot_fit_is_told_which_head() -> None:
    w, head, cpu_only = blocked("StrictFIFO")
    result = w.cycle()
    assert [d.key for d in result.decisions] == [head]  # the CPU-only one was never looked at
    [words] = result.held
    assert (words.key, words.cluster_queue) == (cpu_only, "team-a-cq")
    assert (words.reason, words.message) == ("PendingEvaluation", HELD)


def test_no_words_under_best_effort_fifo_the_head_is_parked() -> None:
    w, head, cpu_only = blocked("BestEffortFIFO")
    result = w.cycle()
    assert [d.key for d in result.decisions] == [head]
    assert result.held == ()
    assert cpu_only in {d.key for d in w.cycle().decisions}  # tried next cycle instead


@pytest.mark.parametrize("already", [True, False])
def test_words_the_status_already_says_are_not_repeated(already: bool) -> None:
    w, _, cpu_only = blocked("StrictFIFO")
    if already:
        # The workload as the informer delivers it after the words were written.
        told = Condition("QuotaReserved", "False", "PendingEvaluation", HELD)
        written = replace(w.workloads[cpu_only], conditions=(told,))
        w.queues.add_workload(written)
    result = w.cycle()
    assert [h.key for h in result.held] == ([] if already else [cpu_only])
    # Asked again after the cycle, the queues give the same answer.
    assert held_words(w.queues, result.decisions) == result.held


def test_an_admitted_head_holds_nobody() -> None:
    w = world("StrictFIFO")
    first = w.submit("first", "team-a", {"cpu": 1}, namespace="team-a")
    w.submit("second", "team-a", {"cpu": 1}, namespace="team-a")
    result = w.cycle()
    assert [d.key for d in result.decisions] == [first]
    assert result.held == ()
