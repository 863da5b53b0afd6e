"""A Budget's status as the plugin renders it: figures, conditions, the ledger round trip."""

from __future__ import annotations

from kq.budgets import parse_budget
from kq_plugins.budgets.book import exhausted_message, number
from kq_plugins.budgets.ledger import Account, Entry
from kq_plugins.budgets.status import invalid, load_entries, render
from tests.budgets.helpers import budget

NOW = 1_800_000_000.0


def test_figures_are_resource_hours_and_exhausted_says_which_resource() -> None:
    b = parse_budget(budget("b", {"kind": "ClusterQueue", "name": "q"}, {"cpu": "1"}))
    full = Account({"cpu": 3_000_000.0}, {"cpu": 600_000.0})  # 3000 + 600 core-seconds
    status = render(b, [], full, NOW, {})
    assert status["consumed"] == {"cpu": "0.833333"}
    assert status["reserved"] == {"cpu": "0.166667"}
    assert status["remaining"] == {"cpu": "0"}
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Exhausted"]["status"] == "True"
    assert conditions["Exhausted"]["message"] == "no cpu-hours left in the window"
    assert conditions["Active"]["reason"] == "Active"


def test_a_condition_keeps_its_time_while_its_status_holds() -> None:
    b = parse_budget(budget("b", {"kind": "ClusterQueue", "name": "q"}, {"cpu": "1"}))
    first = render(b, [], Account(), NOW, {})
    later = render(b, [], Account(), NOW + 100, {"status": first})
    assert later["conditions"] == first["conditions"]


def test_the_ledger_survives_a_round_trip_through_the_status() -> None:
    b = parse_budget(budget("b", {"kind": "ClusterQueue", "name": "q"}, {"cpu": "1"}))
    entries = [
        Entry("ns/a", "u1", NOW - 100, {"cpu": 2000}, end=NOW - 10, bound_end=NOW + 50),
        Entry("ns/b", "u2", NOW - 5, {"cpu": 1000}),
    ]
    status = render(b, entries, Account(), NOW, {})
    assert load_entries({"status": status}) == entries


def test_an_invalid_budget_is_inactive_with_the_reason() -> None:
    status = invalid("spec.window.duration: must be a positive duration", NOW, {})
    (active,) = status["conditions"]
    assert (active["type"], active["status"], active["reason"]) == (
        "Active",
        "False",
        "InvalidSpec",
    )


def test_the_pending_message_reads_in_resource_hours() -> None:
    b = parse_budget(budget("team-a", {"kind": "Cohort", "name": "c"}, {"google.com/tpu": "10000"}))
    message = exhausted_message(b, "google.com/tpu", 9940 * 3600.0, 128 * 3600.0)
    assert message == (
        "budget team-a google.com/tpu: 9,940 of 10,000 google.com/tpu-hours used or reserved in "
        "the window; 60 available, needs 128"
    )
    assert [number(x) for x in (0.0125, 2.5, 99.0, 1234.4)] == ["0.0125", "2.5", "99", "1,234"]


def test_a_compacted_entry_survives_the_round_trip_rounded_up() -> None:
    b = parse_budget(budget("b", {"kind": "ClusterQueue", "name": "q"}, {"cpu": "1"}))
    merged = Entry("50 admissions", "", NOW - 900, {}, end=NOW - 100, total={"cpu": 1234.5})
    (back,) = load_entries({"status": render(b, [merged], Account(), NOW, {})})
    assert back.total == {"cpu": 1235.0}
    assert (back.start, back.end) == (merged.start, merged.end)
