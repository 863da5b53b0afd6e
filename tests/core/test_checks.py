"""Which checks an admission needs (``onFlavors``), and the check-state helpers."""

from __future__ import annotations

from typing import Any

from kq.api.clusterqueue import ClusterQueue, parse_cluster_queue
from kq.workload import checks

NOW = 1_767_225_600.0


def cq(**spec: Any) -> ClusterQueue:
    parsed = parse_cluster_queue(
        {"metadata": {"name": "cq"}, "spec": {"resourceGroups": [], **spec}}
    )
    assert isinstance(parsed, ClusterQueue)
    return parsed


def test_checks_apply_on_their_flavors_only() -> None:
    queue = cq(admissionChecksStrategy={"admissionChecks": [
        {"name": "prov", "onFlavors": ["gpu"]},
        {"name": "all"},
        {"name": "spot", "onFlavors": ["spot"]},
    ]})  # fmt: skip
    assert queue.admission_checks == ("prov", "all", "spot")
    assert queue.checks_for(["gpu", "cpu"]) == ("all", "prov")
    assert queue.checks_for(["cpu"]) == ("all",)
    assert cq(admissionChecks=["b", "a"]).checks_for([]) == ("a", "b")
    assert cq().checks_for(["gpu"]) == ()


def test_with_update_moves_the_time_only_with_the_state() -> None:
    current = [{"name": "a", "state": "Pending", "message": "", "lastTransitionTime": "T0",
                "retryCount": 2, "podSetUpdates": [{"name": "main"}]}]  # fmt: skip
    same = checks.with_update(current, {"name": "a", "state": "Pending", "message": "eta 5m"}, NOW)
    assert same[0]["lastTransitionTime"] == "T0"
    assert same[0]["message"] == "eta 5m"
    assert "podSetUpdates" not in same[0]  # the controller's fields are what it says now
    assert same[0]["retryCount"] == 2  # kq's own field survives
    moved = checks.with_update(current, {"name": "a", "state": "Ready", "message": ""}, NOW)
    assert moved[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_retry_time_is_the_latest_retry() -> None:
    current = [
        {"name": "a", "state": "Retry", "requeueAfterSeconds": 10,
         "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"name": "b", "state": "Retry", "requeueAfterSeconds": 60,
         "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"name": "c", "state": "Pending", "requeueAfterSeconds": 600,
         "lastTransitionTime": "2026-01-01T00:00:00Z"},
    ]  # fmt: skip
    assert checks.retry_time(current) == NOW + 60
    assert checks.retry_time(current[2:]) is None


def test_message_names_checks_in_order() -> None:
    states = [{"name": "z", "message": ""}, {"name": "a", "message": "full"}]
    assert checks.checks_message(states, "Retry") == (
        'AdmissionChecks in Retry state: "a" (full); "z"'
    )
