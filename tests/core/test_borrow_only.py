"""Admission terms (``kq_admission_terms``): a borrow-only head is admitted on what its
ClusterQueue borrows from its cohort, with its own unused nominal quota counted as full for
it, and never by preemption."""

from __future__ import annotations

from dataclasses import replace

from kq.api.clusterqueue import ClusterQueue
from kq.scheduler.modes import AdmissionTerms
from kq.workload.info import WorkloadInfo
from tests.core.world import World, pending, plugins

REASON = "budget b cpu: exhausted"


def borrow_only_world(lender_cpu: int, preemption: dict[str, str] | None = None) -> World:
    """ClusterQueue ``team`` (4 cpu nominal) and ``lender`` in one cohort; ``team``'s workloads
    whose name starts with ``over`` are borrow-only."""
    world = World()

    def terms(info: WorkloadInfo, cq: ClusterQueue) -> AdmissionTerms | None:
        over = info.obj.name.startswith("over")
        return AdmissionTerms(borrow_only=True, reason=REASON) if over else None

    # No veto: the budgets plugin's book is process-wide, and budget tests run before this one
    # leave ledgers that cover a ClusterQueue named team.
    world.scheduler.plugins = replace(plugins(), terms=terms, veto=None)
    world.flavor("f")
    spec = {"preemption": preemption} if preemption else {}
    world.cluster_queue("team", [{"f": {"cpu": 4}}], cohort="c", **spec)
    world.cluster_queue("lender", [{"f": {"cpu": lender_cpu}}], cohort="c")
    world.local_queue("team", "team", "team")
    world.local_queue("lender", "lender", "lender")
    return world


def test_it_goes_in_only_on_what_the_cohort_lends_beyond_its_own_unused_quota() -> None:
    world = borrow_only_world(lender_cpu=3)
    # 2 used of team's 4: 2 unused count as full for it; 3 lent: it may have 3 of them.
    world.submit("mine", "team", {"cpu": 2}, namespace="team")
    world.run(1)
    over = world.submit("over", "team", {"cpu": 3}, namespace="team")
    world.run(1)
    assert over in world.admitted()
    # 5 of the cohort's 7 are used, 2 are left: 3 more needs 1 more.
    again = world.submit("over-again", "team", {"cpu": 3}, namespace="team")
    result = world.cycle()
    message = pending(result, again).message
    assert message == (
        f"couldn't assign flavors to pod set main: {REASON}: insufficient quota to borrow for "
        "cpu in flavor f beyond the ClusterQueue's own, 1 more needed"
    )
    # What the borrow-only one left is what team had unused of its own: a plain workload fits.
    plain = world.submit("plain", "team", {"cpu": 2}, namespace="team")
    world.run(1)
    assert plain in world.admitted()


def test_it_never_preempts() -> None:
    policy = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    world = borrow_only_world(lender_cpu=2, preemption=policy)
    low = world.submit("low", "team", {"cpu": 4}, namespace="team", priority=-10)
    lent = world.submit("lent", "lender", {"cpu": 2}, namespace="lender", priority=-10)
    world.run(2)
    assert world.admitted() == {low, lent}
    over = world.submit("over", "team", {"cpu": 1}, namespace="team", priority=100)
    result = world.cycle()
    assert REASON in pending(result, over).message
    assert world.admitted() == {low, lent}
