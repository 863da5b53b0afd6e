"""Workload status patches: full condition lists, transition times, no-op detection."""

from __future__ import annotations

from typing import Any

from kq.api.workload import Admission, PodSetAssignment
from kq.controllers.patches import (
    admit_patch,
    merge_conditions,
    needs_release,
    pending_patch,
    preempt_patch,
    release_patch,
    untrusted_patch,
)
from kq.scheduler.cycle import NO_LONGER_FITS, OVERLAPPING_TARGETS
from kq.scheduler.decisions import Admit, Victim

T0 = "2026-01-01T00:00:00Z"
NOW = 1_800_000_000.0


def cond(type_: str, status: str, reason: str = "R", message: str = "m") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": T0,
    }


def wl(*conditions: dict[str, Any], owned: bool = False, admitted: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "w", "namespace": "ns", "resourceVersion": "7"}
    if owned:
        meta["ownerReferences"] = [{"uid": "job-uid", "kind": "Job", "name": "j"}]
    status: dict[str, Any] = {"conditions": list(conditions)}
    if admitted:
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": []}
    return {"metadata": meta, "status": status}


def types(patch: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["lastTransitionTime"])
        for c in patch["status"]["conditions"]
    }


def test_merge_keeps_transition_time_while_status_stays() -> None:
    merged = merge_conditions(
        [cond("A", "False"), cond("B", "True")],
        [{**cond("A", "False", "Other"), "lastTransitionTime": "later"}],
    )
    assert merged[0] == {**cond("A", "False", "Other")}
    assert merged[1] == cond("B", "True")


def test_admit_sets_admission_and_resets_a_past_eviction() -> None:
    admission = Admission("cq", (PodSetAssignment("main", {"cpu": "rf"}, {"cpu": 2000}, 2),))
    obj = wl(cond("Evicted", "True", "Preempted", "why"), cond("Requeued", "True"))
    patch = admit_patch(obj, Admit("ns/w", admission, borrowing=False), NOW)
    assert patch["status"]["admission"] == {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "rf"}, "resourceUsage": {"cpu": "2"}, "count": 2}
        ],
    }
    got = types(patch)
    assert got["QuotaReserved"][:2] == ("True", "QuotaReserved")
    assert got["Admitted"][:2] == ("True", "Admitted")
    assert got["Evicted"][:2] == ("False", "QuotaReserved")
    assert got["Requeued"] == ("True", "R", T0)
    evicted = next(c for c in patch["status"]["conditions"] if c["type"] == "Evicted")
    assert evicted["message"] == "Previously: why"


def test_admit_with_checks_reserves_quota_and_lists_the_checks_pending() -> None:
    admission = Admission("cq", (PodSetAssignment("main", {"cpu": "rf"}, {"cpu": 1000}, 1),))
    patch = admit_patch(wl(), Admit("ns/w", admission, False, ("b-check", "a-check")), NOW)
    got = types(patch)
    assert got["QuotaReserved"][:2] == ("True", "QuotaReserved")
    assert got["Admitted"][:2] == ("False", "UnsatisfiedAdmissionChecks")
    states = patch["status"]["admissionChecks"]
    assert [(s["name"], s["state"]) for s in states] == [
        ("a-check", "Pending"),
        ("b-check", "Pending"),
    ]


def test_pending_is_written_only_when_the_words_change() -> None:
    obj = wl(cond("QuotaReserved", "False", "Pending", "no room"))
    assert pending_patch(obj, "Pending", "no room", NOW) is None
    patch = pending_patch(obj, "Pending", "still no room", NOW)
    assert patch is not None
    assert patch["status"]["conditions"][0]["message"] == "still no room"
    assert patch["status"]["conditions"][0]["lastTransitionTime"] == T0


def test_a_cycles_passing_words_leave_standing_quota_words_alone() -> None:
    """Another head took the quota first: the workload still waits for quota, and its words
    that say how much is missing stay (they would flip back at its next try otherwise)."""
    missing = "couldn't assign flavors to pod set main: insufficient unused quota, 1 more needed"
    obj = wl(cond("QuotaReserved", "False", "WaitingForQuota", missing))
    assert pending_patch(obj, "WaitingForQuota", NO_LONGER_FITS, NOW) is None
    assert pending_patch(obj, "WaitingForQuota", OVERLAPPING_TARGETS, NOW) is None
    fresh = wl()
    patch = pending_patch(fresh, "WaitingForQuota", NO_LONGER_FITS, NOW)
    assert patch is not None  # a workload with no words gets these
    assert patch["status"]["conditions"][0]["message"] == NO_LONGER_FITS


def test_preempt_marks_once() -> None:
    victim = Victim("ns/w", "InClusterQueue", "Preempted to accommodate a workload")
    patch = preempt_patch(wl(cond("QuotaReserved", "True"), owned=True, admitted=True), victim, NOW)
    assert patch is not None
    assert "admission" not in patch["status"]  # the job stops first; its integration releases
    got = types(patch)
    assert got["Evicted"][:2] == ("True", "Preempted")
    assert got["Preempted"][:2] == ("True", "InClusterQueue")
    assert got["QuotaReserved"][:2] == ("True", "R")
    assert preempt_patch(wl(cond("Evicted", "True", "Preempted")), victim, NOW) is None
    finished = wl(cond("QuotaReserved", "True"), cond("Finished", "True", "Succeeded"))
    assert preempt_patch(finished, victim, NOW) is None  # its quota goes without an eviction


def test_only_bare_evicted_workloads_holding_quota_are_released() -> None:
    evicted = (cond("QuotaReserved", "True"), cond("Evicted", "True", "Preempted", "why"))
    assert needs_release(wl(*evicted, admitted=True))
    assert not needs_release(wl(*evicted, owned=True, admitted=True))
    assert not needs_release(wl(cond("QuotaReserved", "True"), admitted=True))
    patch = release_patch(wl(*evicted, cond("Admitted", "True"), admitted=True), NOW)
    assert patch["status"]["admission"] is None
    got = types(patch)
    assert got["QuotaReserved"][:2] == ("False", "Pending")
    assert got["Admitted"][:2] == ("False", "NoReservation")
    assert got["Requeued"][:2] == ("True", "Preempted")


def test_a_bare_victim_is_released_in_its_eviction_write() -> None:
    """No job to stop: the reservation goes with the eviction, not in a second write."""
    victim = Victim("ns/w", "InClusterQueue", "Preempted to accommodate a workload")
    admitted = (cond("QuotaReserved", "True"), cond("Admitted", "True"))
    patch = preempt_patch(wl(*admitted, admitted=True), victim, NOW)
    assert patch is not None
    assert patch["status"]["admission"] is None
    got = types(patch)
    assert got["Evicted"][:2] == ("True", "Preempted")
    assert got["QuotaReserved"][:2] == ("False", "Pending")
    assert got["Admitted"][:2] == ("False", "NoReservation")
    assert got["Requeued"][:2] == ("True", "Preempted")
    assert not needs_release({**wl(*admitted, admitted=True), **patch})
    untrusted = untrusted_patch(wl(*admitted, admitted=True), "no such flavor", NOW)
    assert untrusted is not None
    assert untrusted["status"]["admission"] is None


def test_release_after_other_evictions_waits_for_backoff() -> None:
    evicted = (cond("QuotaReserved", "True"), cond("Evicted", "True", "PodsReadyTimeout"))
    got = types(release_patch(wl(*evicted, admitted=True), NOW))
    assert got["Requeued"][:2] == ("False", "PodsReadyTimeout")
