"""The workload controller's pure decision: Kueue's check, deactivation and back-off steps."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kq.config import RequeuingStrategy, WaitForPodsReady
from kq.controllers.lifecycle import next_step
from kq.controllers.steps import Facts, Wait, Write
from kq.workload.status import rfc3339

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
T0 = rfc3339(NOW - 60)


def cond(type_: str, status: str, reason: str = "R", message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": T0}  # fmt: skip


def check(name: str, state: str, message: str = "", **extra: Any) -> dict[str, Any]:
    return {"name": name, "state": state, "message": message, "lastTransitionTime": T0, **extra}


def reserved(*checks: dict[str, Any], admitted: bool = False, **status: Any) -> dict[str, Any]:
    conditions = [cond("QuotaReserved", "True", "QuotaReserved")]
    conditions.append(
        cond("Admitted", "True" if admitted else "False", "UnsatisfiedAdmissionChecks")
    )
    return {
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"queueName": "lq"},
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": []},
            "admissionChecks": list(checks),
            "conditions": conditions,
            **status,
        },
    }


def types(step: Write) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in step.patch["status"].get("conditions") or ()}


def test_missing_checks_are_added_pending_and_extra_ones_dropped() -> None:
    step = next_step(reserved(check("old", "Ready")), Facts(("b", "a")), NOW)
    assert isinstance(step, Write)
    states = step.patch["status"]["admissionChecks"]
    assert [(s["name"], s["state"]) for s in states] == [("a", "Pending"), ("b", "Pending")]


def test_unknown_cluster_queue_decides_nothing() -> None:
    assert next_step(reserved(), Facts(None), NOW) is None


def test_all_ready_admits_with_kueues_words_and_wait() -> None:
    step = next_step(reserved(check("a", "Ready")), Facts(("a",)), NOW)
    assert isinstance(step, Write)
    admitted = types(step)["Admitted"]
    assert (admitted["status"], admitted["reason"], admitted["message"]) == (
        "True", "Admitted", "The workload is admitted",
    )  # fmt: skip
    assert step.admitted_after == 60
    assert step.events[0].reason == "Admitted"
    assert step.events[0].message == (
        "Admitted by ClusterQueue cq, wait time since reservation was 60s"
    )


def test_pending_check_leaves_it_be() -> None:
    assert (
        next_step(reserved(check("a", "Pending"), check("b", "Ready")), Facts(("a", "b")), NOW)
        is None
    )


def test_retry_first_sets_requeue_at_then_evicts_resetting_checks() -> None:
    obj = reserved(check("a", "Retry", "try later", requeueAfterSeconds=120), check("b", "Ready"))
    step = next_step(obj, Facts(("a", "b")), NOW)
    assert isinstance(step, Write)
    assert step.patch == {"status": {"requeueState": {"requeueAt": rfc3339(NOW + 60)}}}
    obj["status"]["requeueState"] = {"requeueAt": rfc3339(NOW + 60)}
    step = next_step(obj, Facts(("a", "b")), NOW)
    assert isinstance(step, Write)
    evicted = types(step)["Evicted"]
    assert (evicted["status"], evicted["reason"]) == ("True", "AdmissionCheck")
    assert evicted["message"] == 'Evicted due to AdmissionCheck in Retry state: "a" (try later)'
    assert step.events[0].reason == "EvictedDueToAdmissionCheck"
    a, b = step.patch["status"]["admissionChecks"]
    assert (a["state"], a["retryCount"], a["requeueAfterSeconds"]) == ("Pending", 1, 120)
    assert a["message"] == "Reset to Pending after eviction. Previously: Retry"
    assert (b["state"], b.get("retryCount")) == ("Pending", None)
    assert b["message"] == "Reset to Pending after eviction. Previously: Ready"


def test_rejected_marks_the_deactivation_target_then_deactivates_then_evicts() -> None:
    obj = reserved(check("a", "Rejected", "no capacity"), check("b", "Rejected"), admitted=True)
    step = next_step(obj, Facts(("a", "b")), NOW)
    assert isinstance(step, Write)
    target = types(step)["DeactivationTarget"]
    message = 'AdmissionChecks in Rejected state: "a" (no capacity); "b"'
    assert (target["reason"], target["message"]) == ("AdmissionCheck", message)
    assert step.events[0].reason == "AdmissionCheckRejected"
    assert step.events[0].warning
    obj["status"]["conditions"] = step.patch["status"]["conditions"]
    step = next_step(obj, Facts(("a", "b")), NOW)
    assert isinstance(step, Write)
    assert (step.status, step.patch) == (False, {"spec": {"active": False}})
    obj["spec"]["active"] = False
    step = next_step(obj, Facts(("a", "b")), NOW)
    assert isinstance(step, Write)
    evicted = types(step)["Evicted"]
    assert evicted["reason"] == "DeactivatedDueToAdmissionCheck"
    assert evicted["message"] == f"The workload is deactivated due to {message}"
    assert "DeactivationTarget" not in types(step)
    assert step.patch["status"]["requeueState"] is None
    assert step.evicted == "DeactivatedDueToAdmissionCheck"
    assert step.events[0].reason == "EvictedDueToDeactivatedDueToAdmissionCheck"


def test_deactivated_by_hand_is_evicted_as_deactivated() -> None:
    obj = reserved(admitted=True)
    obj["spec"]["active"] = False
    step = next_step(obj, Facts(()), NOW)
    assert isinstance(step, Write)
    evicted = types(step)["Evicted"]
    assert (evicted["reason"], evicted["message"]) == ("Deactivated", "The workload is deactivated")


def pending(requeued: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"queueName": "lq"},
        "status": {"conditions": [requeued], **status},
    }


def test_back_off_waits_then_finishes() -> None:
    obj = pending(cond("Requeued", "False", "AdmissionCheck"),
                  requeueState={"requeueAt": rfc3339(NOW + 30), "count": 2})  # fmt: skip
    assert next_step(obj, Facts(None), NOW) == Wait(30)
    step = next_step(obj, Facts(None), NOW + 30)
    assert isinstance(step, Write)
    requeued = types(step)["Requeued"]
    assert (requeued["status"], requeued["reason"], requeued["message"]) == (
        "True", "BackoffFinished", "The workload backoff was finished",
    )  # fmt: skip
    assert step.patch["status"]["requeueState"] == {"requeueAt": None, "count": 2}


def test_reactivated_workload_may_queue_again() -> None:
    step = next_step(
        pending(cond("Requeued", "False", "DeactivatedDueToAdmissionCheck")), Facts(), NOW
    )
    assert isinstance(step, Write)
    assert types(step)["Requeued"]["reason"] == "Reactivated"


def test_preempted_and_finished_workloads_are_not_this_controllers_business() -> None:
    assert next_step(pending(cond("Requeued", "True", "Preempted")), Facts(), NOW) is None
    done = reserved(check("a", "Retry"))
    done["status"]["conditions"].append(cond("Finished", "True"))
    assert next_step(done, Facts(("a",)), NOW) is None


# -- no write loop: applying the steps converges, whatever the states ----------------------


def apply(obj: dict[str, Any], step: Write) -> None:
    """A JSON merge patch of the step onto ``obj``, as the API server would apply it."""
    for part, body in step.patch.items():
        target = obj.setdefault(part, {})
        for key, value in body.items():
            if value is None:
                target.pop(key, None)
            elif isinstance(value, dict) and isinstance(target.get(key), dict):
                merged = {**target[key], **value}
                target[key] = {k: v for k, v in merged.items() if v is not None}
            else:
                target[key] = copy.deepcopy(value)


STATES = st.sampled_from(["Pending", "Ready", "Retry", "Rejected"])


@settings(max_examples=300, deadline=None)
@given(
    states=st.lists(STATES, max_size=3),
    required=st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=3),
    admitted=st.booleans(),
    active=st.booleans(),
)
def test_steps_converge_and_never_admit_with_a_check_not_ready(
    states: list[str], required: list[str], admitted: bool, active: bool
) -> None:
    names = ["a", "b", "c"][: len(states)]
    listed = (check(n, s, requeueAfterSeconds=5) for n, s in zip(names, states, strict=True))
    obj = reserved(*listed, admitted=admitted)
    obj["spec"]["active"] = active
    for _ in range(10):
        step = next_step(obj, Facts(tuple(required)), NOW)
        if not isinstance(step, Write):
            break
        was_admitted = any(c["type"] == "Admitted" and c["status"] == "True"
                           for c in obj["status"]["conditions"])  # fmt: skip
        apply(obj, step)
        if step.admitted_after is not None:
            assert not was_admitted
            assert all(s["state"] == "Ready" for s in obj["status"]["admissionChecks"])
            assert {s["name"] for s in obj["status"]["admissionChecks"]} == set(required)
    else:
        raise AssertionError(f"no fixed point after 10 writes: {obj}")


# -- waitForPodsReady ------------------------------------------------------------------------

PODS_READY = WaitForPodsReady(
    enable=True,
    timeout=300,
    recovery_timeout=30,
    requeuing_strategy=RequeuingStrategy(backoff_limit_count=2, backoff_base_seconds=10),
)


def admitted(pods_ready: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    obj = reserved(admitted=True, **status)
    obj["status"]["conditions"][1] = cond("Admitted", "True", "Admitted")
    if pods_ready is not None:
        obj["status"]["conditions"].append(pods_ready)
    return obj


def test_pods_not_ready_in_time_evict_with_back_off() -> None:
    obj = admitted()
    assert next_step(obj, Facts((), PODS_READY), NOW) == Wait(240)
    step = next_step(obj, Facts((), PODS_READY), NOW + 240)
    assert isinstance(step, Write)
    evicted = types(step)["Evicted"]
    assert (evicted["reason"], evicted["message"]) == (
        "PodsReadyTimeout", "Exceeded the PodsReady timeout ns/w",
    )  # fmt: skip
    assert step.patch["status"]["requeueState"] == {"count": 1, "requeueAt": rfc3339(NOW + 250)}
    again = admitted(requeueState={"count": 1})
    step = next_step(again, Facts((), PODS_READY), NOW + 240)
    assert isinstance(step, Write)
    assert step.patch["status"]["requeueState"] == {"count": 2, "requeueAt": rfc3339(NOW + 260)}


def test_past_the_requeue_limit_it_is_deactivated() -> None:
    step = next_step(admitted(requeueState={"count": 2}), Facts((), PODS_READY), NOW + 240)
    assert isinstance(step, Write)
    target = types(step)["DeactivationTarget"]
    assert (target["reason"], target["message"]) == (
        "RequeuingLimitExceeded", "exceeding the maximum number of re-queuing retries",
    )  # fmt: skip


def test_ready_pods_and_recovery() -> None:
    assert (
        next_step(admitted(cond("PodsReady", "True", "Started")), Facts((), PODS_READY), NOW + 999)
        is None
    )
    # Recovery is timed from the PodsReady transition (T0 = NOW - 60), with its own timeout.
    recovering = admitted(cond("PodsReady", "False", "WaitForRecovery"))
    assert next_step(recovering, Facts((), PODS_READY), NOW - 40) == Wait(10)
    step = next_step(recovering, Facts((), PODS_READY), NOW)
    assert isinstance(step, Write)
    assert types(step)["Evicted"]["reason"] == "PodsReadyTimeout"
    without_recovery = WaitForPodsReady(enable=True, timeout=300)
    assert next_step(recovering, Facts((), without_recovery), NOW + 999) is None


# -- stopPolicy and maximumExecutionTimeSeconds ------------------------------------------------


def test_hold_and_drain_evicts_admitted_workloads_and_restart_requeues() -> None:
    obj = admitted()
    assert next_step(obj, Facts((), cluster_queue_stop="Hold"), NOW) is None
    step = next_step(obj, Facts((), cluster_queue_stop="HoldAndDrain"), NOW)
    assert isinstance(step, Write)
    evicted = types(step)["Evicted"]
    assert (evicted["reason"], evicted["message"]) == (
        "ClusterQueueStopped", "The ClusterQueue is stopped",
    )  # fmt: skip
    step = next_step(obj, Facts((), local_queue_stop="HoldAndDrain"), NOW)
    assert isinstance(step, Write)
    assert types(step)["Evicted"]["reason"] == "LocalQueueStopped"
    held = pending(cond("Requeued", "False", "ClusterQueueStopped"))
    assert next_step(held, Facts(cluster_queue_stop="HoldAndDrain"), NOW) is None
    step = next_step(held, Facts(), NOW)
    assert isinstance(step, Write)
    requeued = types(step)["Requeued"]
    assert (requeued["status"], requeued["reason"], requeued["message"]) == (
        "True", "ClusterQueueRestarted", "The ClusterQueue was restarted after being stopped",
    )  # fmt: skip
    step = next_step(pending(cond("Requeued", "False", "LocalQueueStopped")), Facts(), NOW)
    assert isinstance(step, Write)
    assert types(step)["Requeued"]["reason"] == "LocalQueueRestarted"


def test_maximum_execution_time_deactivates() -> None:
    obj = admitted(accumulatedPastExexcutionTimeSeconds=30)  # v1beta1's spelling
    obj["spec"]["maximumExecutionTimeSeconds"] = 100
    assert next_step(obj, Facts(()), NOW) == Wait(10)
    step = next_step(obj, Facts(()), NOW + 10)
    assert isinstance(step, Write)
    target = types(step)["DeactivationTarget"]
    assert (target["reason"], target["message"]) == (
        "MaximumExecutionTimeExceeded", "exceeding the maximum execution time",
    )  # fmt: skip
    assert step.patch["status"]["accumulatedPastExexcutionTimeSeconds"] is None
    assert step.events[0].message == "The maximum execution time (100s) exceeded"
    # With waitForPodsReady too, the nearer limit decides when to look again.
    assert next_step(obj, Facts((), PODS_READY), NOW) == Wait(10)


def test_an_orphaned_workload_is_finished_then_loses_its_finalizer() -> None:
    obj = admitted()
    obj["metadata"].update(labels={"kueue.x-k8s.io/job-uid": "j1"},
                           finalizers=["kueue.x-k8s.io/resource-in-use", "other"])  # fmt: skip
    step = next_step(obj, Facts(()), NOW)
    assert isinstance(step, Write)
    finished = types(step)["Finished"]
    assert (finished["reason"], finished["message"]) == (
        "OwnerNotFound", "The workload's owner no longer exists",
    )  # fmt: skip
    obj["status"]["conditions"] = step.patch["status"]["conditions"]
    step = next_step(obj, Facts(()), NOW)
    assert isinstance(step, Write)
    assert (step.status, step.patch) == (False, {"metadata": {"finalizers": ["other"]}})
    obj["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "j", "uid": "j1"}]
    assert next_step(obj, Facts(()), NOW) is None  # owned again: not an orphan
