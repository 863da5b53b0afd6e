"""The HTML report: summary tables and the charts inline (one self-contained file), and each
chart also as its own ``.svg`` file next to it."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from kq.simulate.svg import clock
from kq.simulate.terminal import HEADER, rows

MAX_WORKLOAD_ROWS = 1000
"""The workload table is cut there; the CSV and JSON have every workload."""

_CSS = """
body{font:14px sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 20px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}
.runs{display:grid;grid-template-columns:repeat(auto-fit,minmax(780px,1fr));gap:16px}
figure{margin:0 0 12px}
"""


def _table(header: Sequence[str], body: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    lines = [f"<table><tr>{head}</tr>"]
    for row in body:
        cells = "".join(f"<td>{escape('' if c is None else str(c))}</td>" for c in row)
        lines.append(f"<tr>{cells}</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _workloads(data: dict[str, Any]) -> str:
    header = ("workload", "ClusterQueue", "arrival", "wait", "preempted", "flavors", "finished")
    body = []
    for row in data["workloads"][:MAX_WORKLOAD_ROWS]:
        wait = row["waitSeconds"]
        finished = row["finished"]
        body.append(
            (
                row["workload"],
                row["clusterQueue"],
                clock(row["arrival"]),
                "never admitted" if wait is None else clock(wait),
                row["preemptions"],
                row["flavors"],
                "-" if finished is None else clock(finished),
            )
        )
    more = len(data["workloads"]) - MAX_WORKLOAD_ROWS
    note = f"<p>{more} more in workloads.csv.</p>" if more > 0 else ""
    return _table(header, body) + note


def _run_section(data: dict[str, Any], charts: dict[str, str], files: dict[str, str]) -> str:
    figures = "".join(
        f'<figure>{svg}<figcaption><a href="{escape(files[stem])}">{escape(files[stem])}'
        "</a></figcaption></figure>"
        for stem, svg in charts.items()
    )
    return (
        f"<section><h2>{escape(data['label'])}</h2>"
        f"<p>{len(data['workloads'])} workloads, virtual time {clock(data['virtualEndSeconds'])}, "
        f"{data['cycles']} scheduling cycles in {data['wallSeconds']:.2f} s of wall time.</p>"
        f"{_table(HEADER, rows(data))}{figures}"
        f"<details><summary>Workloads</summary>{_workloads(data)}</details></section>"
    )


def write_charts(out: Path, charts: dict[str, str], prefix: str = "") -> dict[str, str]:
    """Each chart as ``{prefix}{stem}.svg`` in ``out``; returns ``stem -> file name``."""
    names = {}
    for stem, svg in charts.items():
        name = f"{prefix}{stem}.svg"
        (out / name).write_text(svg, encoding="utf-8")
        names[stem] = name
    return names


def write_report(
    out: Path,
    runs: Sequence[tuple[dict[str, Any], dict[str, str], dict[str, str]]],
    comparison: Sequence[Sequence[str]] | None = None,
) -> Path:
    """``report.html``: one section per run (side by side when two), and for a comparison the
    table of each figure as ``A -> B``."""
    title = " vs ".join(escape(data["label"]) for data, _, _ in runs)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>kq simulate: {title}"]
    parts.append(f"</title><style>{_CSS}</style></head><body><h1>kq simulate: {title}</h1>")
    if comparison is not None:
        parts.append("<h2>Differences</h2>" + _table(HEADER, comparison))
    parts.append("<div class='runs'>")
    parts.extend(_run_section(data, charts, files) for data, charts, files in runs)
    parts.append("</div></body></html>\n")
    path = out / "report.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
