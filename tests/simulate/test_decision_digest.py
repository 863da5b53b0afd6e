"""Mode A's decisions pinned: the core's performance work must not change one of them.

The digests hash every admission (instant, workload, ClusterQueue, flavors, usage) and every
eviction (instant, victim, preemptor) in order, as ``benchmarks/decisions.py`` records them;
they were recorded at revision 9cdc362, before issue 21's work on the core began.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "decisions.py"

RECORDED = {
    "baseline": ("f65f618aa76ad206de662a0c536936ee6f53e0f69e0a66e1a215fafc888a63b3", 21060, 6060),
    "baseline-fair-sharing": (
        "746f6e70052ee13557c835710d2c31e2608b4e85ede006ba7d48dad6a0dae154",
        21160,
        6160,
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
