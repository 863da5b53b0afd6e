"""The chaos suite's short run: one seeded storm of every fault kind, in under a minute.

Two ``kq run`` replicas against the embedded API server; a fixed seed draws the same faults and
the same mix each run (their interleaving with kq's own timing still varies, which is the
point). Every invariant is asserted at once so a failure lists them all, and the figures are
printed (``pytest -s``, or in the report of a failure). The long run is ``benchmarks/chaos.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.faults import KINDS
from tests.chaos.storm import StormConfig, run_storm

pytestmark = pytest.mark.slow
SEED = 18


async def test_a_seeded_storm_breaks_no_invariant(tmp_path: Path) -> None:
    # No ``cluster`` fixture: the storm kills and restarts an embedded API server of its own,
    # and a real kube-apiserver has no fault hooks; so it runs once, whatever --backend says.
    report = await run_storm(
        StormConfig(
            workdir=tmp_path,
            seed=SEED,
            duration=10.0,
            submit_every=0.25,
            converge_within=25.0,
            kinds=KINDS,
        )
    )
    print("\n".join(report.lines()))
    assert report.violations == []
    assert set(report.injected) == set(KINDS), f"not every kind ran: {report.injected}"
    assert report.finished > 0
    assert report.converge_seconds is not None
