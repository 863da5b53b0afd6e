"""`kq simulate` end to end on the examples: summary, files, and the curves in the SVGs."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kq.cli import main

EXAMPLES = Path(__file__).parents[2] / "examples" / "simulate"
SVG = "{http://www.w3.org/2000/svg}"


def _series(path: Path) -> set[str]:
    root = ET.parse(path).getroot()
    return {g.attrib["data-series"] for g in root.iter(f"{SVG}g") if "data-series" in g.attrib}


def _simulate(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "out"
    argv = ["simulate", str(EXAMPLES / "setup.yaml"), "--trace", str(EXAMPLES / "trace.yaml")]
    assert main([*argv, "--out", str(out), "--progress", "off", *extra]) == 0
    return out


def test_report_files_and_series(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _simulate(tmp_path)
    printed = capsys.readouterr().out
    assert "team-a-cq" in printed
    assert "cohort researchers" in printed
    assert "never admitted" in printed
    assert "team-b/b-job-7" in printed
    for name in ("report.html", "figures.json", "workloads.csv", "queues.csv", "series.csv"):
        assert (out / name).stat().st_size > 0
    assert _series(out / "pending.svg") == {"team-a-cq", "team-b-cq"}
    assert _series(out / "timeline.svg") == {"team-a-cq", "team-b-cq"}
    assert {"team-a-cq on-demand", "team-a-cq spot", "team-b-cq on-demand"} <= _series(
        out / "utilisation-cpu.svg"
    )
    assert _series(out / "cohort-nvidia-com-gpu.svg") >= {"researchers a100", "researchers h100"}
    timeline = (out / "timeline.svg").read_text()
    assert 'class="bar evicted"' in timeline  # the urgent job's reclaim shows
    html = (out / "report.html").read_text()
    assert html.count("<svg") == len(list(out.glob("*.svg")))
    data = json.loads((out / "figures.json").read_text())
    assert len(data["workloads"]) == 47
    assert data["clusterQueues"]["team-a-cq"]["resources"]["on-demand/cpu"]["nominal"] == 10
    rows = list(csv.DictReader((out / "workloads.csv").open()))
    urgent = next(r for r in rows if r["workload"] == "team-a/a-urgent-1")
    assert urgent["waitSeconds"] == "0.0"
    assert urgent["flavors"] == "cpu=on-demand,memory=on-demand"


def test_csv_trace(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["simulate", str(EXAMPLES / "setup.yaml"), "--trace", str(EXAMPLES / "trace.csv")]
    assert main([*argv, "--out", str(out), "--progress", "off"]) == 0
    data = json.loads((out / "figures.json").read_text())
    mpi = next(w for w in data["workloads"] if w["workload"] == "team-a/a-csv-mpi")
    assert mpi["admissions"] >= 1


def test_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _simulate(tmp_path, "--compare", str(EXAMPLES / "compare" / "team-b-more-cpu.yaml"))
    printed = capsys.readouterr().out
    assert "baseline -> team-b-more-cpu" in printed
    assert " -> " in printed
    a = json.loads((out / "a-figures.json").read_text())
    b = json.loads((out / "b-figures.json").read_text())
    assert a["clusterQueues"]["team-b-cq"]["resources"]["on-demand/cpu"]["nominal"] == 6
    assert b["clusterQueues"]["team-b-cq"]["resources"]["on-demand/cpu"]["nominal"] == 10
    assert (out / "a-pending.svg").exists()
    assert (out / "b-pending.svg").exists()
    assert "Differences" in (out / "report.html").read_text()
