"""The mixes ``benchmarks/instructions.py`` counts: the same workloads, spread or not."""

from __future__ import annotations

from instructions import drive


def test_one_arrival_per_instant_runs_many_more_cycles_than_the_baseline() -> None:
    baseline, spread = drive("baseline"), drive("one per instant")
    # Mode A's baseline decisions, as benchmarks/admission.py reports them.
    assert (baseline["admissions"], baseline["evictions"], baseline["cycles"]) == (
        21_060,
        6_060,
        1_366,
    )
    # Most cycles decide a head or two, as in B2; the figures are per admission.
    assert spread["cycles"] > 10 * baseline["cycles"]
    assert spread["admissions"] > 0
    assert drive("one per instant") == spread  # the same decisions every run
