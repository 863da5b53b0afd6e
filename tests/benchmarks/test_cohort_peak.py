"""Modes B's end-to-end quota check: the runner follows each cohort's held CPU in the watch's
order, and a peak above the cohort's nominal quota fails the run."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from perf_report import check, cohort_peaks
from perf_runner import Record, Runner

from kq.runtime.store import Change, EventType


def workload(name: str, cq: str, *, reserved: bool, finished: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Finished", "status": "True"}] if finished else []
    return {
        "metadata": {"namespace": "ns", "name": name, "uid": name,
                     "creationTimestamp": "2026-11-27T00:00:00Z"},
        "status": {"admission": {"clusterQueue": cq} if reserved else None,
                   "conditions": conditions},
    }  # fmt: skip


def test_the_runner_keeps_each_cohorts_peak_of_held_cpu() -> None:
    runner = Runner(None)  # type: ignore[arg-type]  # never talks to a server here
    runner.cohort_of = {"a": "c", "b": "c", "solo": "solo"}
    for name, cq, cpu in (("w1", "a", 8), ("w2", "b", 8), ("w3", "a", 6), ("w4", "solo", 3)):
        runner.records[f"ns/{name}"] = Record(name, cq, cpu, 1.0, sent=0.0)
    for name, cq, reserved, finished in (
        ("w1", "a", True, False),
        ("w2", "b", True, False),  # 16 held in c
        ("w1", "a", True, True),  # finished: 8
        ("w3", "a", True, False),  # 14
        ("w4", "solo", True, False),
        ("w3", "a", False, False),  # released: 8
    ):
        obj = workload(name, cq, reserved=reserved, finished=finished)
        runner.changed(Change(EventType.MODIFIED, obj, None))
    assert runner.cohort_peak == {"c": 16, "solo": 3}
    assert runner.cohort_held == {"c": 8, "solo": 3}


def report(peaks: dict[str, int]) -> dict[str, Any]:
    queues = [SimpleNamespace(name=n, nominal=10) for n in ("a", "b", "solo")]
    return {"queues": queues, "cohortOf": {"a": "c", "b": "c", "solo": "solo"},
            "cohortPeak": peaks}  # fmt: skip


def test_a_peak_above_the_cohorts_nominal_quota_fails_the_run() -> None:
    within = cohort_peaks(report({"c": 16, "solo": 10}))
    assert within["peakPctOfNominal"] == pytest.approx(100.0)  # solo: 10 of 10
    assert within["overCommitted"] == {}
    over = cohort_peaks(report({"c": 21, "solo": 3}))
    assert over["overCommitted"] == {"c": [21, 20]}
    assert check({"failures": [], "cohorts": within}, None)
    assert not check({"failures": [], "cohorts": over}, None)


def test_a_run_without_peaks_reports_none() -> None:
    assert cohort_peaks({"queues": []}) == {"peakPctOfNominal": None, "overCommitted": {}}
