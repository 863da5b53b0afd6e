"""The tail figures of modes B: admissions after the last one of another class, their
rate, the quota they held, the cycles in that stretch, and each process's CPU there."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from perf_runner import Record
from perf_tail import ceiling, tail

T0 = 1_000.0


def record(cls: str, cpu: int, admitted: float | None, finished: float | None) -> Record:
    return Record(
        class_name=cls,
        cluster_queue="cq",
        cpu=cpu,
        runtime_s=0.2,
        sent=T0,
        admitted_seen=None if admitted is None else T0 + admitted,
        finished_seen=None if finished is None else T0 + finished,
    )


def run(records: list[Record], **controller: Any) -> dict[str, Any]:
    return {
        "records": {str(i): r for i, r in enumerate(records)},
        "started": T0,
        "makespanS": 20.0,
        "queues": [SimpleNamespace(nominal=10)],
        "controller": controller,
        # time, server, controller, runner: CPU seconds so far
        "cpuSamples": [(T0 + s, s * 0.9, s * 0.5, s * 0.2) for s in range(0, 21, 2)],
    }


def test_the_tail_starts_at_the_last_admission_of_another_class() -> None:
    records = [
        record("large", 10, 1.0, 9.0),
        record("medium", 5, 10.0, 11.0),  # the last admission of another class
        *(record("small", 1, 10.0 + i, 10.5 + i) for i in range(10)),
        record("small", 1, 5.0, 6.0),  # admitted before: not the tail's
        record("small", 1, None, None),  # never admitted: nothing to count
    ]
    t = tail(run(records, cycleAt=[T0 + 9, T0 + 12, T0 + 14], cycleHeads=[3, 4, 2]))
    assert t is not None
    assert (t["className"], t["startS"], t["seconds"]) == ("small", 10.0, 10.0)
    assert t["admissions"] == 9  # the small one admitted at 10.0 itself is not after it
    assert t["perSecond"] == pytest.approx(0.9)
    # held within [10, 20]: the medium 1 s x 5, ten smalls 0.5 s x 1
    assert t["heldPct"] == pytest.approx((5 + 5) * 100 / (10 * 10))
    assert (t["cycles"], t["headsPerCycle"]) == (2, 3.0)
    cpu = t["cpuMsPerAdmission"]  # samples at 10 and 20 bracket the tail
    assert cpu["server"]["ms"] == pytest.approx(9 * 1e3 / 9)
    assert cpu["server"]["coreShare"] == pytest.approx(0.9)
    assert cpu["runner"]["ms"] == pytest.approx(2 * 1e3 / 9)


def test_no_tail_without_two_classes_or_any_admission() -> None:
    assert tail(run([record("small", 1, None, None)])) is None
    assert tail(run([record("small", 1, 1.0, 2.0), record("small", 1, 3.0, 4.0)])) is None


def test_a_tail_without_samples_or_cycles_still_counts_its_admissions() -> None:
    records = [record("large", 10, 1.0, 2.0), record("small", 1, 5.0, 6.0)]
    data = run(records)
    data["cpuSamples"] = []
    t = tail(data)
    assert t is not None
    assert (t["admissions"], t["cycles"], t["headsPerCycle"]) == (1, 0, None)
    assert t["cpuMsPerAdmission"] == {}


def test_the_ceiling_is_bound_by_the_busiest_process_or_by_the_machine() -> None:
    assert ceiling({"server": 2.0, "controller": 0.5}, 2) == pytest.approx(500)  # one CPU
    assert ceiling({"a": 1.0, "b": 1.0, "c": 1.0}, 2) == pytest.approx(2e3 / 3)  # two CPUs
    assert ceiling({"a": 1.0, "b": 1.0}, 1) == pytest.approx(500)
