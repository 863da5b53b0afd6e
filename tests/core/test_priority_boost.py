"""Kueue's priority boost (``kueue.x-k8s.io/priority-boost``, gate ``PriorityBoost``): the
core orders and preempts by ``spec.priority`` plus the boost; the webhook refuses a boost that
is not a signed int32 while the gate is on."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kq.api.priority import (
    LOWERED_BY_BUDGET_ANNOTATION,
    PRIORITY_BOOST_ANNOTATION,
    boost_error,
    priority_boost,
)
from kq.api.workload import Workload, parse_workload
from kq.webhooks import kueue_validator
from kq.workload.info import new_info, with_obj
from tests.core.world import World, preempt


@pytest.mark.parametrize("value", ["0", "7", "-7", "+7", "2147483647", "-2147483648"])
def test_a_signed_int32_is_a_boost(value: str) -> None:
    assert boost_error(value) is None
    assert priority_boost({PRIORITY_BOOST_ANNOTATION: value}, gate=True) == int(value)


@pytest.mark.parametrize("value", ["", " 7", "7 ", "1_0", "0x10", "2147483648", "\uff11", "high"])
def test_anything_else_is_not(value: str) -> None:
    assert boost_error(value) is not None
    assert priority_boost({PRIORITY_BOOST_ANNOTATION: value}, gate=True) == 0


def test_the_gate_off_ignores_the_annotation_unless_a_budget_set_it() -> None:
    assert priority_boost({PRIORITY_BOOST_ANNOTATION: "-5"}, gate=False) == 0
    lowered = {PRIORITY_BOOST_ANNOTATION: "-5", LOWERED_BY_BUDGET_ANNOTATION: "team-a"}
    assert priority_boost(lowered, gate=False) == -5
    assert priority_boost({}, gate=True) == 0


def _workload(priority: int, boost: int) -> Workload:
    obj = {
        "metadata": {"namespace": "ns", "name": "w", "uid": "u"},
        "spec": {"queueName": "q", "priority": priority, "podSets": [
            {"name": "main", "count": 1, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }  # fmt: skip
    parsed = parse_workload(obj)
    assert isinstance(parsed, Workload)
    return replace(parsed, priority_boost=boost)


def test_the_info_weighs_the_effective_priority_and_follows_a_new_boost() -> None:
    info = new_info(_workload(10, -15), "cq")
    assert info.priority == -5
    assert info.order_key()[0] == 5
    assert info.obj.with_admission(None, ()).priority_boost == -15
    again = with_obj(info, _workload(10, 3), {})
    assert again.priority == 13
    assert again.shape != info.shape  # a new boost is a new equivalence class


def test_a_boosted_workload_goes_first() -> None:
    world = World()
    world.flavor("f")
    world.cluster_queue("cq", [{"f": {"cpu": 1}}], queueingStrategy="StrictFIFO")
    world.local_queue("default", "lq", "cq")
    plain = world.submit("plain", "lq", {"cpu": 1}, priority=5)
    boosted = world.submit("boosted", "lq", {"cpu": 1}, priority=0, boost=10)
    world.run(2)
    assert world.admitted() == {boosted}
    assert plain not in world.admitted()


def test_preemption_weighs_the_boost_both_ways() -> None:
    world = World()
    world.flavor("f")
    policy = {"withinClusterQueue": "LowerPriority"}
    world.cluster_queue("cq", [{"f": {"cpu": 1}}], preemption=policy)
    world.local_queue("default", "lq", "cq")
    lowered = world.submit("lowered", "lq", {"cpu": 1}, priority=5, boost=-10)
    world.run(1)
    assert world.admitted() == {lowered}
    # Priority 0 is below the lowered workload's spec priority, above its effective one.
    newcomer = world.submit("newcomer", "lq", {"cpu": 1}, priority=0)
    assert [v.key for v in preempt(world.cycle(), newcomer).victims] == [lowered]


def _review(annotations: dict[str, Any]) -> dict[str, Any]:
    return {"request": {
        "uid": "u1", "operation": "CREATE",
        "kind": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "Workload"},
        "userInfo": {"username": "alice"},
        "object": {"metadata": {"name": "w", "annotations": annotations}, "spec": {}},
    }}  # fmt: skip


def test_the_webhook_refuses_a_bad_boost_only_with_the_gate_on() -> None:
    on, off = kueue_validator(None, priority_boost=True), kueue_validator(None)
    bad = _review({PRIORITY_BOOST_ANNOTATION: "high"})
    refused = on(bad)["response"]
    assert refused["allowed"] is False
    assert refused["status"]["message"] == (
        "metadata.annotations[kueue.x-k8s.io/priority-boost]: Invalid value: 'high': "
        "must be a valid signed integer"
    )
    assert off(bad)["response"]["allowed"] is True
    assert on(_review({PRIORITY_BOOST_ANNOTATION: "-3"}))["response"]["allowed"] is True
    assert on(_review({}))["response"]["allowed"] is True
