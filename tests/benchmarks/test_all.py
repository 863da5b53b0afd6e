"""``benchmarks/all.py`` end to end at a tiny scale: every benchmark runs, writes its JSON, and
the summary carries the figures the performance issues ask for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from perf_report import figures

ROOT = Path(__file__).parents[2]
BENCHMARKS = ROOT / "benchmarks"


@pytest.mark.slow
def test_all_prints_one_summary_and_writes_every_report(tmp_path: Path) -> None:
    out = tmp_path / "all.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(ROOT), str(ROOT / "plugins"))))
    command = [sys.executable, str(BENCHMARKS / "all.py"), "--scale", "0.01", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    summary = done.stdout.split("=== summary ===")[1]
    for words in ("scaling cycle p50 by pending", "admissions/s", "per 1,000 pending", "loadavg"):
        assert words in summary
    whole = json.loads(out.read_text())
    a, b2 = whole["reports"]["A"], whole["reports"]["B2 embedded"]
    assert set(a["scaling"]["cycleP50Us"]) == {"1000", "10000", "100000"}
    assert b2["workloads"] == 180
    assert not b2["failures"]
    assert b2["cycles"]["count"] > 0
    assert b2["cycles"]["maxPending"] > 0
    assert b2["controller"]["peakRssMiB"] >= b2["controller"]["rssEndMiB"] > 0
    assert b2["loadBefore"].startswith("loadavg")
    compared = figures(b2)
    assert compared["writes/admission"] >= compared["Workload writes/admission"] >= 1
    assert compared["API server CPU s"] > 0
