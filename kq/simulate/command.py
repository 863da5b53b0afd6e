"""``kq simulate``: read, check, simulate (once, or twice with ``--compare``), report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kq.config import parse_duration
from kq.simulate.charts import all_charts
from kq.simulate.figures import compute
from kq.simulate.files import run_data, write_files
from kq.simulate.record import Progress
from kq.simulate.report import write_charts, write_report
from kq.simulate.run import Prepared, Run, prepare, simulate
from kq.simulate.setup import load_setup, patched
from kq.simulate.source import InputError
from kq.simulate.terminal import (
    comparison,
    comparison_rows,
    end_progress,
    progress_line,
    stderr_is_terminal,
    summary,
)

Outputs = tuple[dict[str, Any], dict[str, str], dict[str, str]]
"""A run's figures as data, its charts (stem -> SVG) and their file names."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Replay a workload trace on the real admission core (the same cache, queues, "
        "scheduler and plugins as kq run) on a virtual clock, and report waits, preemptions, "
        "flavors, utilisation and borrowing."
    )
    parser.add_argument("setup", nargs="+", type=Path,
                        help="YAML files or directories of queueing objects (ResourceFlavor, "
                        "Cohort, ClusterQueue, LocalQueue, priority classes, Namespace, "
                        "a kq Configuration)")  # fmt: skip
    parser.add_argument("--trace", type=Path, required=True,
                        help="the workloads: YAML or CSV (see examples/simulate)")  # fmt: skip
    parser.add_argument("--config", type=Path, help="kq configuration file (YAML)")
    parser.add_argument("--compare", type=Path, metavar="CONFIG_OR_PATCH",
                        help="run again with this Configuration or merge patch of objects, "
                        "and report both side by side")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("simulate-report"),
                        help="directory for report.html, figures.json and the CSV and SVG "
                        "files (default: simulate-report)")  # fmt: skip
    parser.add_argument("--until", help="stop at this virtual time (seconds or 2h30m)")
    parser.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                        help="progress line on stderr (auto: when it is a terminal)")  # fmt: skip
    parser.set_defaults(func=run)


def _until(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise InputError(f"--until: {exc}") from None


def _prepare(args: argparse.Namespace) -> list[Prepared]:
    """Everything read and checked, for both runs, before anything is simulated."""
    base = load_setup(args.setup, args.config)
    prepared = [prepare("baseline" if args.compare else "simulation", base, args.trace)]
    if args.compare is not None:
        prepared.append(prepare(args.compare.stem, patched(base, args.compare), args.trace))
    return prepared


def _progress(args: argparse.Namespace, label: str) -> Progress | None:
    if args.progress == "off" or (args.progress == "auto" and not stderr_is_terminal()):
        return None
    show: Progress = progress_line(sys.stderr, label)
    return show


def _simulate(args: argparse.Namespace, prepared: Prepared, until: float | None) -> Run:
    progress = _progress(args, prepared.label)
    result = simulate(prepared, progress, until)
    if progress is not None:
        end_progress(sys.stderr)
    return result


def _outputs(out: Path, run: Run, prefix: str) -> Outputs:
    figures = compute(run)
    data = run_data(run, figures)
    write_files(out, data, prefix)
    charts = all_charts(run, figures)
    return data, charts, write_charts(out, charts, prefix)


def run(args: argparse.Namespace) -> int:
    try:
        until = _until(args.until)
        prepared = _prepare(args)
    except InputError as exc:
        print(f"kq simulate: {exc}", file=sys.stderr)
        print("kq simulate: nothing was simulated", file=sys.stderr)
        return 2
    runs = [_simulate(args, p, until) for p in prepared]
    prefixes = ["", ""] if len(runs) == 1 else ["a-", "b-"]
    outputs = [_outputs(args.out, r, prefix) for r, prefix in zip(runs, prefixes, strict=False)]
    for data, _, _ in outputs:
        print(summary(data) + "\n")
    table = None
    if len(outputs) == 2:
        print(comparison(outputs[0][0], outputs[1][0]) + "\n")
        table = comparison_rows(outputs[0][0], outputs[1][0])
    report = write_report(args.out, outputs, table)
    for r in runs:
        if r.pending:
            shown = ", ".join(r.pending[:5]) + (" ..." if len(r.pending) > 5 else "")
            print(f"{r.label}: {len(r.pending)} never admitted (or left pending): {shown}")
    print(f"report: {report} (figures.json, *.csv and *.svg alongside)")
    return 0
