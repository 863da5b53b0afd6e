"""Mode A's decisions pinned: the core's performance work must not change one of them.

The digests hash every admission (instant, workload, ClusterQueue, flavors, usage) and every
eviction (instant, victim, preemptor) in order, as ``benchmarks/decisions.py`` records them;
they were recorded at revision 9cdc362, before issue 21's work on the core began, and
recorded again when kq took up Kueue's one-second batching of requeues (``kq.queue.batch``),
which changes decisions on purpose: a parked workload waits for the batch after the event.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "decisions.py"

RECORDED = {
    "baseline": ("92221084907eedc2430116e5bff9e9dceee60564d2c015b7251d84ea42b2b48a", 15060, 60),
    "baseline-fair-sharing": (
        "87f60acad23f3c13a30670ba55fea1ab49fdb6b8ffa562358e6f9036d8d95e07",
        15320,
        320,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("mix", sorted(RECORDED))
def test_decisions_unchanged(mix: str) -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), mix], capture_output=True, text=True, check=True
    ).stdout
    outcome = json.loads(out)
    assert (outcome["digest"], outcome["admissions"], outcome["evictions"]) == RECORDED[mix]
