"""``kq simulate`` keeps the budgets' book one changed Workload at a time: it must decide as a
full sync after every change would (the way ``kq run``'s controller reads the caches)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kq_plugins.budgets.incremental import Incremental
from tests.budgets.helpers import budget
from tests.simulate.helpers import (
    FLAVOR,
    cluster_queue,
    local_queue,
    run_files,
    write_setup,
    write_trace,
)
from tests.simulate.helpers import job as entry


def _setup(tmp_path: Path) -> Path:
    queues = [cluster_queue(name, 8, "all", borrowingLimit=8,
                            preemption={"withinClusterQueue": "LowerPriority",
                                        "reclaimWithinCohort": "Any"})
              for name in ("a", "b", "c")]  # fmt: skip
    return write_setup(
        tmp_path / "setup.yaml", FLAVOR, *queues, *(local_queue(q) for q in "abc"),
        budget("cohort", {"kind": "Cohort", "name": "all"}, {"cpu": "4"}, "20m"),
        budget("a", {"kind": "ClusterQueue", "name": "a"}, {"cpu": "1"}, "10m", "Calendar"),
        budget("lq-b", {"kind": "LocalQueue", "namespace": "default", "name": "b"},
               {"cpu": "1.5"}, "15m"),
    )  # fmt: skip


def _trace(tmp_path: Path, count: int) -> Path:
    pick = random.Random(20)
    entries: list[dict[str, Any]] = []
    for i in range(count):
        runtime = pick.choice((30, 60, 120, 300))
        entries.append(entry(f"w{i}", i * 7.0, pick.choice("abc"), pick.choice((1, 2, 4)),
                             runtime, priority=pick.choice((0, 100)),
                             maxExecutionSeconds=runtime + pick.choice((0, 60))))  # fmt: skip
    return write_trace(tmp_path / "trace.yaml", entries)


def _decisions(run: Any) -> dict[str, list[tuple[float, float | None]]]:
    return {
        key: [(stint.start, stint.end) for stint in record.stints]
        for key, record in run.recorder.workloads.items()
    }


def test_incremental_book_decides_as_a_full_sync_after_every_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup, trace = _setup(tmp_path), _trace(tmp_path, 80)
    incremental = _decisions(run_files(setup, trace))
    # The reference: every veto after a change reads every Workload again.
    monkeypatch.setattr(Incremental, "_note", lambda self, obj: self._rescope() or ())
    full = _decisions(run_files(setup, trace))
    assert incremental == full
    waited = [k for k, stints in full.items() if stints and stints[0][0] > 7.0 * int(k[9:])]
    assert len(waited) > 20, "the budgets should hold a good part of the trace back"
    assert sum(len(s) > 1 for s in full.values()) > 0, "some should be preempted and rerun"
