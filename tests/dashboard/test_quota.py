"""The cohort tree and its quota rows: nominal, used and borrowed from the queues' specs and
status, lent shared among the lenders of a root cohort."""

from __future__ import annotations

from typing import Any

from kq.dashboard.quota import NO_COHORT, Usage, cohort_tree, share_lending


def cq(name: str, nominal: str, *, cohort: str | None = None, used: str = "0",
       borrowed: str = "0", lending: str | None = None) -> dict[str, Any]:  # fmt: skip
    quota: dict[str, Any] = {"name": "cpu", "nominalQuota": nominal}
    if lending is not None:
        quota["lendingLimit"] = lending
    spec: dict[str, Any] = {
        "resourceGroups": [{"coveredResources": ["cpu"],
                            "flavors": [{"name": "rf", "resources": [quota]}]}],
    }  # fmt: skip
    if cohort:
        spec["cohort"] = cohort
    usage = [{"name": "rf", "resources": [{"name": "cpu", "total": used, "borrowed": borrowed}]}]
    status = {"flavorsUsage": usage, "pendingWorkloads": 1, "admittedWorkloads": 2}
    return {"metadata": {"name": name}, "spec": spec, "status": status}


def cohort(name: str, parent: str | None = None, nominal: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"parentName": parent} if parent else {}
    if nominal is not None:
        spec["resourceGroups"] = [{"coveredResources": ["cpu"], "flavors": [
            {"name": "rf", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]  # fmt: skip
    return {"metadata": {"name": name}, "spec": spec}


def test_a_borrower_and_its_lender_in_one_cohort() -> None:
    roots = cohort_tree(
        [],
        [cq("a", "4", cohort="team"), cq("b", "2", cohort="team", used="3", borrowed="1"),
         cq("alone", "1", used="1")],
    )  # fmt: skip
    assert [r.name for r in roots] == ["team", NO_COHORT]
    a, b = roots[0].queues
    assert (a.name, a.usage[0].nominal, a.usage[0].used, a.usage[0].lent) == ("a", 4000, 0, 1000)
    assert (b.usage[0].used, b.usage[0].borrowed, b.usage[0].lent) == (3000, 1000, 0)
    assert (b.pending, b.admitted, b.strategy) == (1, 2, "BestEffortFIFO")
    assert roots[1].queues[0].name == "alone"
    assert roots[1].queues[0].usage[0].lent == 0


def test_lending_is_shared_by_idle_quota_within_lending_limits() -> None:
    rows = [
        Usage("rf", "cpu", nominal=10, used=0),
        Usage("rf", "cpu", nominal=10, used=0, lending_limit=2),
        Usage("rf", "cpu", nominal=4, used=9, borrowed=5),
        Usage("other", "cpu", nominal=4, used=0),
    ]
    share_lending(rows)
    assert [r.lent for r in rows] == [4, 1, 0, 0]
    assert sum(r.lent for r in rows) == 5


def test_lending_never_exceeds_what_is_idle() -> None:
    rows = [
        Usage("rf", "cpu", nominal=2, used=1),
        Usage("rf", "cpu", nominal=1, used=4, borrowed=3),
    ]
    share_lending(rows)
    assert rows[0].lent == 1


def test_nested_cohorts_and_cohorts_only_named() -> None:
    roots = cohort_tree(
        [cohort("root", nominal="6"), cohort("child", parent="root"), cohort("orphan", "gone")],
        [cq("x", "1", cohort="child", used="3", borrowed="2"), cq("y", "1", cohort="named")],
    )
    assert [r.name for r in roots] == ["gone", "named", "root"]
    root = roots[2]
    assert [c.name for c in root.cohorts] == ["child"]
    assert root.quota[0].nominal == 6000
    assert root.quota[0].lent == 2000  # the root's own quota is what x borrows
    assert root.cohorts[0].queues[0].name == "x"
    assert [c.name for c in roots[0].cohorts] == ["orphan"]


def test_a_parent_cycle_shows_both_cohorts_as_roots() -> None:
    roots = cohort_tree([cohort("p", parent="q"), cohort("q", parent="p")], [])
    assert sorted(r.name for r in roots) == ["p", "q"]


def test_an_invalid_queue_says_why_and_still_shows() -> None:
    broken = cq("broken", "1")
    broken["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "lots"
    roots = cohort_tree([], [broken])
    queue = roots[0].queues[0]
    assert queue.name == "broken"
    assert "nominalQuota" in queue.problem
    assert queue.usage == []
