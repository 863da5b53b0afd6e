"""kq's Budget API: what ``parse_budget`` accepts, and the words it refuses the rest with."""

from __future__ import annotations

from typing import Any

import pytest

from kq.budgets import CALENDAR, HOUR, BudgetError, parse_budget, resource_name_error
from kq.webhooks.kueue import validate_kueue
from tests.budgets.helpers import budget

CQ = {"kind": "ClusterQueue", "name": "team-a"}


def test_a_budget_parses_into_resource_seconds_in_kueue_units() -> None:
    parsed = parse_budget(budget("b", CQ, {"google.com/tpu": "10000", "cpu": "1.5"}, "720h"))
    assert parsed.limits == {"google.com/tpu": 10000 * HOUR, "cpu": 1500 * HOUR}
    assert parsed.window.seconds == 720 * HOUR
    assert parsed.policy == "Wait"


def test_lower_priority_and_borrow_parse() -> None:
    lower = budget("b", CQ, {"cpu": "1"})
    lower["spec"].update({"whenExhausted": "LowerPriority", "priorityBoost": -100})
    parsed = parse_budget(lower)
    assert (parsed.policy, parsed.priority_boost) == ("LowerPriority", -100)
    borrow = budget("b", CQ, {"cpu": "1"})
    borrow["spec"]["whenExhausted"] = "Borrow"
    assert (parse_budget(borrow).policy, parse_budget(borrow).priority_boost) == ("Borrow", 0)


def test_a_calendar_window_starts_where_it_is_told() -> None:
    obj = budget("b", CQ, {"cpu": "1"}, "24h", CALENDAR)
    obj["spec"]["window"]["start"] = "2026-01-01T06:00:00Z"
    window = parse_budget(obj).window
    assert window.start(window.anchor + 25 * HOUR) == window.anchor + 24 * HOUR


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"window": {"duration": "0s"}}, "spec.window.duration: must be a positive duration"),
        ({"window": {"duration": "0"}}, "spec.window.duration: must be a positive duration"),
        ({"window": {"duration": "-1h"}}, "spec.window.duration: must be a positive duration"),
        ({"window": {"duration": "a week"}}, "spec.window.duration"),
        ({"resourceHours": {"tpu": "10"}}, "spec.resourceHours[tpu]: unknown resource 'tpu'"),
        ({"resourceHours": {"cpu": "-1"}}, "spec.resourceHours[cpu]: must not be negative"),
        ({"resourceHours": {}}, "spec.resourceHours: at least one resource"),
        (
            {"whenExhausted": "Spend"},
            "spec.whenExhausted: 'Spend' is not supported; use one of Wait, LowerPriority, Borrow",
        ),
        (
            {"whenExhausted": "LowerPriority"},
            "spec.priorityBoost: required with whenExhausted: LowerPriority",
        ),
        (
            {"whenExhausted": "LowerPriority", "priorityBoost": 5},
            "spec.priorityBoost: must be a negative 32-bit integer such as -100, got 5",
        ),
        ({"whenExhausted": "LowerPriority", "priorityBoost": 0}, "spec.priorityBoost: must be"),
        ({"whenExhausted": "LowerPriority", "priorityBoost": "-5"}, "spec.priorityBoost: must be"),
        (
            {"whenExhausted": "LowerPriority", "priorityBoost": -(2**31) - 1},
            "spec.priorityBoost: must be",
        ),
        ({"priorityBoost": -5}, "spec.priorityBoost: only a LowerPriority budget has one"),
        ({"whenExhausted": "Borrow", "priorityBoost": -5}, "spec.priorityBoost: only a"),
        ({"target": {"kind": "LocalQueue", "name": "lq"}}, "spec.target.namespace: required"),
        ({"target": {"kind": "Namespace", "name": "x"}}, "spec.target.kind: must be one of"),
    ],
)
def test_bad_budgets_are_refused_naming_the_field(change: dict[str, Any], words: str) -> None:
    obj = budget("b", CQ, {"cpu": "1"})
    obj["spec"].update(change)
    with pytest.raises(BudgetError, match=words.replace("[", r"\[").replace("]", r"\]")):
        parse_budget(obj)


@pytest.mark.parametrize(
    "name", ["cpu", "memory", "pods", "ephemeral-storage", "hugepages-2Mi", "google.com/tpu"]
)
def test_resources_a_pod_can_request_are_known(name: str) -> None:
    assert resource_name_error(name) is None


def test_the_webhook_refuses_an_invalid_budget_and_lets_a_valid_one_and_status_through() -> None:
    bad = budget("b", CQ, {"cpu": "1"}, "0s")

    def review(obj: dict[str, Any], sub: str = "") -> dict[str, Any]:
        request = {
            "uid": "1",
            "kind": {"group": "kq.dev", "version": "v1alpha1", "kind": "Budget"},
            "operation": "UPDATE",
            "subResource": sub,
            "object": obj,
        }
        return dict(validate_kueue({"request": request})["response"])

    refused = review(bad)
    assert refused["allowed"] is False
    assert refused["status"]["message"] == (
        "Budget b is invalid: spec.window.duration: must be a positive duration such as 720h "
        "or 30m, got '0s'"
    )
    assert review(budget("b", CQ, {"cpu": "1"}))["allowed"] is True
    assert review(bad, "status")["allowed"] is True  # kq's own status writes
