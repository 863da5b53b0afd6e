"""``kq simulate`` with a Budget in the setup: the run waits for the budget as kq run would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kq.simulate.source import InputError
from tests.budgets.helpers import budget
from tests.simulate.helpers import (
    FLAVOR,
    cluster_queue,
    job,
    local_queue,
    run_files,
    write_setup,
    write_trace,
)

CQ = {"kind": "ClusterQueue", "name": "team"}


def setup(tmp_path: Path, *extra: dict[str, Any]) -> Path:
    return write_setup(tmp_path / "setup.yaml", FLAVOR, cluster_queue("team", 100),
                       local_queue("team"), *extra)  # fmt: skip


def starts(run: Any, name: str) -> list[float]:
    return [stint.start for stint in run.recorder.workloads[f"default/{name}"].stints]


@pytest.mark.parametrize(("alignment", "earliest"), [("Rolling", 3840.0), ("Calendar", 3600.0)])
def test_a_budget_holds_the_second_workload_until_the_window_frees_it(
    tmp_path: Path, alignment: str, earliest: float
) -> None:
    # 10 cores x 300 s = 3000 core-seconds each; the budget allows 3600 per hour.
    hourly = budget("b", CQ, {"cpu": "1"}, "1h", alignment)
    trace = write_trace(tmp_path / "trace.yaml", [
        job("first", 0, "team", 10, 300, maxExecutionSeconds=300),
        job("second", 10, "team", 10, 300, maxExecutionSeconds=300),
    ])  # fmt: skip
    run = run_files(setup(tmp_path, hourly), trace)
    assert starts(run, "first") == [0.0]
    (second,) = starts(run, "second")
    # Rolling: first ran 0-300 s; second needs 3000 of the 3600, so at most 60 s of first's
    # may remain in the last hour: from t=3840. Calendar: the next window starts at t=3600.
    # The budget looks again every 50th of its window (72 s) while something waits on it.
    assert earliest <= second <= earliest + 72
    assert run.pending == []


def test_without_a_budget_both_start_at_once(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "trace.yaml", [
        job("first", 0, "team", 10, 300, maxExecutionSeconds=300),
        job("second", 10, "team", 10, 300, maxExecutionSeconds=300),
    ])  # fmt: skip
    run = run_files(setup(tmp_path), trace)
    assert starts(run, "second") == [10.0]


def test_a_workload_without_a_time_limit_never_starts_under_a_budget(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "trace.yaml", [job("free", 0, "team", 1, 10)])
    run = run_files(setup(tmp_path, budget("b", CQ, {"cpu": "1"})), trace)
    assert run.pending == ["default/free"]


def test_a_bad_budget_stops_before_simulating(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "trace.yaml", [job("a", 0, "team", 1, 10)])
    bad = budget("b", CQ, {"tpu": "1"})
    with pytest.raises(InputError, match=r"setup.yaml:\d+: Budget b: spec.resourceHours\[tpu\]"):
        run_files(setup(tmp_path, bad), trace)


@pytest.mark.parametrize(("lent", "earliest", "latest"), [(20, 10.0, 10.0), (5, 3840.0, 3912.0)])
def test_borrow_lets_the_second_in_at_once_only_if_the_cohort_lends_enough(
    tmp_path: Path, lent: int, earliest: float, latest: float
) -> None:
    # Over budget, second (10 cores) goes in only if the cohort lends 10 beyond team's own 90
    # unused: 20 lent do, 5 do not (it then waits for the window, as with Wait).
    borrow = budget("b", CQ, {"cpu": "1"}, "1h")
    borrow["spec"]["whenExhausted"] = "Borrow"
    setup_file = write_setup(
        tmp_path / "setup.yaml", FLAVOR, cluster_queue("team", 100, cohort="c"),
        cluster_queue("lender", lent, cohort="c"), local_queue("team"), borrow,
    )  # fmt: skip
    trace = write_trace(tmp_path / "trace.yaml", [
        job("first", 0, "team", 10, 300, maxExecutionSeconds=300),
        job("second", 10, "team", 10, 300, maxExecutionSeconds=300),
    ])  # fmt: skip
    run = run_files(setup_file, trace)
    (second,) = starts(run, "second")
    assert earliest <= second <= latest
    assert run.pending == []
