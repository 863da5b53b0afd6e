"""A wait's first words are written once it has lasted Kueue's requeue batch period (1 s),
and its words change at most once per that period; a new reason within a wait already
explained, held words, Inadmissible words, admissions and evictions are written at once."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import pytest

from kq.controllers.decisions import DecisionWriter
from kq.controllers.words import FIRST_WORDS_AFTER_S, WORDS_MIN_INTERVAL_S, WordsPacer
from kq.controllers.writer import WorkloadWriter
from kq.queue.requeue import RequeueReason
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Pending
from tests.controllers.helpers import cluster_queue, flavor, local_queue, workload
from tests.controllers.test_feed import Fed, added
from tests.harness import eventually

KEY = "ns/w"
# Well inside the interval: what is written at once is written by then.
AT_ONCE_S = WORDS_MIN_INTERVAL_S / 2


class Server:
    """Stands in for the status writer: answers every patch at once and records its words."""

    def __init__(self) -> None:
        self.patches: list[dict[str, Any]] = []

    async def patch_status(
        self, obj: dict[str, Any], patch: dict[str, Any]
    ) -> dict[str, Any] | None:
        self.patches.append(patch)
        version = str(int(obj["metadata"]["resourceVersion"]) + 1)
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}, **patch}

    def event(self, obj: dict[str, Any], reason: str, message: str, **_: object) -> None:
        pass

    def said(self) -> list[str]:
        """Each write's QuotaReserved, as "status reason: message"."""
        out = []
        for patch in self.patches:
            for c in patch["status"]["conditions"]:
                if c["type"] == "QuotaReserved":
                    out.append(f"{c['status']} {c['reason']}: {c.get('message', '')}")
        return out


@pytest.fixture
def fed() -> Fed:
    """A core where ``ns/w`` fits, so a cycle admits it."""
    fed = Fed()
    fed.feed.resource_flavor(added(flavor("rf")))
    fed.feed.cluster_queue(added(cluster_queue("cq", "rf", "cpu", 1)))
    fed.feed.local_queue(added(local_queue("ns", "lq", "cq")))
    fed.feed.namespace(added({"metadata": {"name": "ns", "labels": {}}}))
    fed.add_workload(workload("ns", "w", "lq", {"cpu": 1}))
    return fed


def pending(message: str, reason: str = "WaitingForQuota") -> CycleResult:
    return CycleResult((Pending(KEY, "cq", reason, message, RequeueReason.NO_FIT),), entries=1)


def held(message: str) -> CycleResult:
    words = Pending(KEY, "cq", "WaitingForQuota", message, RequeueReason.NO_FIT)
    return CycleResult((), entries=0, held=(words,))


async def deferred(decisions: DecisionWriter) -> None:
    """Until the explainers looked at the words wanted last and deferred them."""

    async def timer() -> bool:
        return bool(decisions._pacer.timers())

    await eventually(timer, "the words deferred", within=AT_ONCE_S, interval=0.001)


async def first_words(fed: Fed) -> tuple[DecisionWriter, Server]:
    """The first words of a wait, written once it has lasted ``FIRST_WORDS_AFTER_S``."""
    server = Server()
    decisions = DecisionWriter(fed.feed, fed.workloads, cast(WorkloadWriter, server))
    wanted = time.monotonic()
    decisions.apply(pending("3 more needed"), decided_at=0.0)
    await deferred(decisions)
    assert server.patches == []
    async with asyncio.timeout(FIRST_WORDS_AFTER_S + AT_ONCE_S):
        await decisions.drain()
    assert time.monotonic() - wanted >= FIRST_WORDS_AFTER_S
    assert server.said() == ["False WaitingForQuota: 3 more needed"]
    return decisions, server


async def test_a_wait_that_ends_within_a_second_is_never_explained(fed: Fed) -> None:
    server = Server()
    decisions = DecisionWriter(fed.feed, fed.workloads, cast(WorkloadWriter, server))
    decisions.apply(pending("3 more needed"), decided_at=0.0)
    await deferred(decisions)
    decisions.apply(pending("1 more needed"), decided_at=0.0)  # the wait goes on: same start
    await deferred(decisions)
    admitted = fed.feed.scheduler.run_cycle(time.time())
    decisions.apply(admitted, decided_at=time.time())
    async with asyncio.timeout(AT_ONCE_S):
        await decisions.drain()
    assert server.said() == ["True QuotaReserved: Quota reserved in ClusterQueue cq"]


@pytest.mark.parametrize(
    "result",
    [held("3 more needed"), pending("LocalQueue lq doesn't exist", "Inadmissible")],
    ids=["held behind a head", "inadmissible"],
)
async def test_held_and_inadmissible_words_are_written_at_once(
    fed: Fed, result: CycleResult
) -> None:
    server = Server()
    decisions = DecisionWriter(fed.feed, fed.workloads, cast(WorkloadWriter, server))
    decisions.apply(result, decided_at=0.0)
    async with asyncio.timeout(AT_ONCE_S):
        await decisions.drain()
    words = result.held[0] if result.held else result.decisions[0]
    assert isinstance(words, Pending)
    assert server.said() == [f"False {words.reason}: {words.message}"]


async def test_a_new_message_waits_out_the_interval_and_only_the_latest_is_written(
    fed: Fed,
) -> None:
    decisions, server = await first_words(fed)
    # The interval runs from the pacer's stamp, taken as the first write started: a moment
    # before this test could read the clock itself.
    written = decisions._pacer._written[KEY]
    decisions.apply(pending("2 more needed"), decided_at=0.0)
    await deferred(decisions)
    decisions.apply(pending("1 more needed"), decided_at=0.0)
    await deferred(decisions)
    assert len(server.patches) == 1
    await decisions.drain()  # waits for the deferred words
    assert time.monotonic() - written >= WORDS_MIN_INTERVAL_S
    assert server.said() == [
        "False WaitingForQuota: 3 more needed",
        "False WaitingForQuota: 1 more needed",
    ]
    assert not decisions._pacer.timers()


@pytest.mark.parametrize(
    ("reason", "message"),
    [("Pending", "3 more needed"), ("Inadmissible", "LocalQueue lq doesn't exist")],
)
async def test_a_new_reason_is_written_at_once(fed: Fed, reason: str, message: str) -> None:
    decisions, server = await first_words(fed)
    decisions.apply(pending(message, reason), decided_at=0.0)
    async with asyncio.timeout(AT_ONCE_S):
        await decisions.drain()
    assert server.said()[1:] == [f"False {reason}: {message}"]


async def test_an_admission_cancels_deferred_words(fed: Fed) -> None:
    decisions, server = await first_words(fed)
    decisions.apply(pending("2 more needed"), decided_at=0.0)
    await deferred(decisions)
    admitted = fed.feed.scheduler.run_cycle(time.time())
    assert [type(d) for d in admitted.decisions] == [Admit]
    decisions.apply(admitted, decided_at=time.time())
    assert not decisions._pacer.timers()
    async with asyncio.timeout(AT_ONCE_S):
        await decisions.drain()
    assert server.said() == [
        "False WaitingForQuota: 3 more needed",
        "True QuotaReserved: Quota reserved in ClusterQueue cq",
    ]


async def test_written_times_last_only_as_long_as_they_defer_and_forget_drops_the_rest() -> None:
    now = [0.0]
    wanted: list[tuple[str, str, str]] = []
    pacer = WordsPacer(lambda *words: wanted.append(words), clock=lambda: now[0])
    pacer.written("a")
    now[0] = 0.5
    pacer.written("b")
    assert pacer.defer("a", "WaitingForQuota", "1 more needed", rewording=True, held=False)
    now[0] = 1.2
    pacer.written("c")  # "a" defers nothing any more; "b" still does
    assert list(pacer._written) == ["b", "c"]
    pacer.forget("a")
    pacer.forget("b")
    assert list(pacer._written) == ["c"]
    assert not pacer.timers()
    assert not pacer._deferred
    assert pacer.defer("c", "WaitingForQuota", "1 more needed", rewording=True, held=False)
    pacer.wanted("d")
    now[0] = 1.5
    assert pacer.defer("d", "WaitingForQuota", "2 more needed", rewording=False, held=False)
    now[0] = 2.2  # the wait has lasted its second
    assert not pacer.defer("d", "WaitingForQuota", "2 more needed", rewording=False, held=False)
    await pacer.close()
    assert not pacer.timers()
    assert not pacer._written
    assert wanted == []
