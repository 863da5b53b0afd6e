from __future__ import annotations

from typing import Any

from kq.sandbox.cluster.pod_failure_policy import evaluate
from tests.sandbox.builders import pod


def _failed(code: int, container: str = "main", **conditions: str) -> dict[str, Any]:
    p = pod("p", phase="Failed")
    p["status"]["containerStatuses"] = [
        {"name": container, "state": {"terminated": {"exitCode": code}}}
    ]
    p["status"]["conditions"] = [{"type": t, "status": s} for t, s in conditions.items()]
    return p


def _job(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"podFailurePolicy": {"rules": list(rules)}}}


def test_first_matching_rule_wins() -> None:
    job = _job(
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
    )
    assert evaluate(job, _failed(42, DisruptionTarget="True"))[0] == "Ignore"
    action, message = evaluate(job, _failed(42))
    assert action == "FailJob"
    assert message == (
        "Container main for pod default/p failed with exit code 42 matching FailJob rule at index 1"
    )
    assert evaluate(job, _failed(1)) == ("Count", "")


def test_not_in_and_container_name() -> None:
    codes = {"containerName": "main", "operator": "NotIn", "values": [1]}
    rule = {"action": "FailJob", "onExitCodes": codes}
    job = _job(rule)
    assert evaluate(job, _failed(2))[0] == "FailJob"
    assert evaluate(job, _failed(1))[0] == "Count"
    assert evaluate(job, _failed(2, container="sidecar"))[0] == "Count"
    assert evaluate(job, _failed(0))[0] == "Count"  # exit code 0 never matches


def test_condition_status_defaults_to_true() -> None:
    job = _job({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]})
    assert evaluate(job, _failed(137, DisruptionTarget="False"))[0] == "Count"
    assert evaluate(_job(), _failed(137, DisruptionTarget="True"))[0] == "Count"
