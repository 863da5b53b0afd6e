"""``kq simulate``: read, check, simulate (once, or twice with ``--compare``), report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kq.config import parse_duration
from kq.observability.logs import configure_logging
from kq.simulate.charts import all_charts
from kq.simulate.figures import compute
from kq.simulate.files import run_data, write_files
from kq.simulate.fromcluster import CLASS_KINDS, read_cluster, write_captured
from kq.simulate.record import Progress
from kq.simulate.report import write_charts, write_report
from kq.simulate.run import Prepared, Run, prepare, simulate
from kq.simulate.setup import add_objects, load_setup, patched
from kq.simulate.source import InputError
from kq.simulate.terminal import (
    comparison,
    comparison_rows,
    end_progress,
    progress_line,
    stderr_is_terminal,
    summary,
)

DEFAULT_SINCE = "24h"
Trace = Path | Sequence[Mapping[str, Any]]
Outputs = tuple[dict[str, Any], dict[str, str], dict[str, str]]
"""A run's figures as data, its charts (stem -> SVG) and their file names."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Replay a workload trace on the real admission core (the same cache, queues, "
        "scheduler and plugins as kq run) on a virtual clock, and report waits, preemptions, "
        "flavors, utilisation and borrowing."
    )
    parser.add_argument("setup", nargs="*", type=Path,
                        help="YAML files or directories of queueing objects (ResourceFlavor, "
                        "Cohort, ClusterQueue, LocalQueue, priority classes, Namespace, "
                        "Topology, Node, NodePool, a kq Configuration)")  # fmt: skip
    trace = parser.add_mutually_exclusive_group(required=True)
    trace.add_argument("--trace", type=Path,
                       help="the workloads: YAML or CSV (see examples/simulate)")  # fmt: skip
    trace.add_argument("--trace-from-cluster", action="store_true",
                       help="the workloads a live cluster ran over --since")  # fmt: skip
    parser.add_argument("--from-cluster", action="store_true",
                        help="read the queueing objects from a live cluster")  # fmt: skip
    parser.add_argument("--kubeconfig", type=Path,
                        help="the live cluster's kubeconfig (default: $KUBECONFIG, "
                        "~/.kube/config)")  # fmt: skip
    parser.add_argument("--since", default=None,
                        help="with --trace-from-cluster: Workloads created in this last "
                        "window, e.g. 24h (default 24h)")  # fmt: skip
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
    parser.add_argument("--log-level", default="warning",
                        choices=("debug", "info", "warning", "error"),
                        help="log level on stderr (debug: every decision)")  # fmt: skip
    parser.set_defaults(func=run)


def _until(text: str | None, flag: str = "--until") -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from None


def _cluster_flags(args: argparse.Namespace) -> float | None:
    """The window of --trace-from-cluster; refuses flags that would be ignored."""
    live = args.from_cluster or args.trace_from_cluster
    if args.kubeconfig is not None and not live:
        raise InputError("--kubeconfig: give --from-cluster or --trace-from-cluster too")
    if args.since is not None and not args.trace_from_cluster:
        raise InputError("--since: only with --trace-from-cluster")
    if not args.setup and not args.from_cluster:
        raise InputError("no setup: give YAML files or directories, or --from-cluster")
    if not args.trace_from_cluster:
        return None
    since = _until(args.since or DEFAULT_SINCE, "--since")
    if since is None or since <= 0:
        raise InputError(f"--since: must be a positive duration, not {args.since!r}")
    return since


def _prepare(args: argparse.Namespace) -> list[Prepared]:
    """Everything read and checked, for both runs, before anything is simulated."""
    since = _cluster_flags(args)
    base = load_setup(args.setup, args.config)
    trace: Trace = args.trace
    if args.from_cluster or since is not None:
        classes = {name for kind, name in base.objects if kind in CLASS_KINDS}
        found = read_cluster(args.kubeconfig, args.from_cluster, since, classes)
        if found.captured is not None:
            add_objects(base, "the cluster", found.captured.objects)
        if found.history is not None:
            trace = found.history.entries
        written = write_captured(args.out, found)
        for note in [*found.notes, f"as files: {', '.join(str(p) for p in written)}"]:
            print(note)
    prepared = [prepare("baseline" if args.compare else "simulation", base, trace)]
    if args.compare is not None:
        prepared.append(prepare(args.compare.stem, patched(base, args.compare), trace))
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
    # The scheduler logs each decision at debug level: thousands of lines for a long trace.
    configure_logging(args.log_level)
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
        if r.loop is not None:
            print(f"{r.label}: {r.loop.describe()}")
        if r.pending:
            shown = ", ".join(r.pending[:5]) + (" ..." if len(r.pending) > 5 else "")
            print(f"{r.label}: {len(r.pending)} never admitted (or left pending): {shown}")
    print(f"report: {report} (figures.json, *.csv and *.svg alongside)")
    return 0
