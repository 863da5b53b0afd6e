"""The storm's checker, checked: it must flag every over-commit and nothing else."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.chaos.invariants import Ledger, quota_violations, unsettled
from tests.chaos.topology import QUEUES, RESOURCE

SLOTS = [(q.name, flavor) for q in QUEUES for flavor in q.quotas]


def admitted(cq: str, flavor: str, cpu: int, n: int, finished: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Finished", "status": "True"}] if finished else []
    usage = {RESOURCE: str(cpu)}
    assignment = {"name": "main", "flavors": {RESOURCE: flavor}, "resourceUsage": usage}
    return {
        "metadata": {"namespace": cq, "name": f"w{n}", "uid": f"u{n}"},
        "status": {
            "admission": {"clusterQueue": cq, "podSetAssignments": [assignment]},
            "conditions": conditions,
        },
    }


usages = st.lists(st.tuples(st.sampled_from(SLOTS), st.integers(1, 4), st.booleans()), max_size=12)


@given(usages)
def test_usage_within_what_each_queue_keeps_for_itself_is_never_flagged(
    picks: list[tuple[tuple[str, str], int, bool]],
) -> None:
    """However it is spread, usage no larger than each queue's unlent quota always fits."""
    kept = {
        (q.name, f): quota.nominal - (quota.lending_limit or 0)
        for q in QUEUES
        for f, quota in q.quotas.items()
    }
    left = dict(kept)
    workloads = []
    for n, ((cq, flavor), cpu, finished) in enumerate(picks):
        if finished or cpu <= left[cq, flavor]:
            left[cq, flavor] -= 0 if finished else cpu
            workloads.append(admitted(cq, flavor, cpu, n, finished))
    assert quota_violations(workloads, QUEUES) == []


@given(usages)
def test_more_than_the_cohort_or_a_queue_may_hold_is_always_flagged(
    picks: list[tuple[tuple[str, str], int, bool]],
) -> None:
    workloads = [admitted(cq, f, cpu, n, done) for n, ((cq, f), cpu, done) in enumerate(picks)]
    held: dict[tuple[str, str], int] = {}
    for (cq, flavor), cpu, finished in picks:
        held[cq, flavor] = held.get((cq, flavor), 0) + (0 if finished else cpu)
    cohort = [q for q in QUEUES if q.cohort]
    over_cohort = any(
        sum(held.get((q.name, f), 0) for q in cohort)
        > sum(q.quotas[f].nominal for q in cohort if f in q.quotas)
        for f in ("chaos-main", "chaos-spot")
    )
    over_queue = any(
        held.get((q.name, f), 0) > quota.nominal + (quota.borrowing_limit or 0)
        for q in QUEUES
        for f, quota in q.quotas.items()
        if quota.borrowing_limit is not None or not q.cohort
    )
    if over_cohort or over_queue:
        assert quota_violations(workloads, QUEUES) != []


def test_a_finished_workload_that_reopens_and_a_job_held_twice_are_violations() -> None:
    ledger = Ledger()
    done = admitted("team-a", "chaos-main", 1, 1, finished=True)
    ledger.observe([done], QUEUES)
    assert ledger.violations == []
    ledger.observe([admitted("team-a", "chaos-main", 1, 1)], QUEUES)
    twice = [admitted("team-a", "chaos-main", 1, n) for n in (2, 3)]
    for obj in twice:
        obj["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "j"}]
    ledger.observe(twice, QUEUES)
    assert [v.split(": ", 1)[1] for v in ledger.violations] == [
        "team-a/w1 was finished and is no longer",
        "Job team-a/j holds quota 2 times",
    ]


def test_pending_counts_as_settled_only_with_a_reason() -> None:
    base: dict[str, Any] = {"metadata": {"namespace": "solo", "name": "w"}}
    assert unsettled(base) is not None
    said = {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "why"}
    assert unsettled({**base, "status": {"conditions": [said]}}) is None
    assert unsettled({**base, "status": {"conditions": [{**said, "message": ""}]}}) is not None
