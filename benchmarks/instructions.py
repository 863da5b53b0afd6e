"""Instructions the compiled admission core executes on mode A's mixes, counted by callgrind.

CPU time on these machines varies 1.5x between identical runs; the instructions that
``Scheduler.run_cycle`` executes do not: the decisions are the same (mode A's virtual clock)
and so is the code. Two mixes, each run once under ``valgrind --tool=callgrind`` (about
three minutes each, both at once):

- ``baseline``: mode A's (``admission.py``), every ClusterQueue's arrivals at the same
  instants, so a cycle decides many heads at once;
- ``one per instant``: the same workloads, each ClusterQueue's arrivals 3.1 ms after the
  previous queue's, so most cycles decide one or two heads, as in B2, where the runner
  creates Workloads one by one. The simulator stops this mix at 31 virtual seconds, when a
  workload has been preempted 100 times (``kq.simulate.engine.PreemptionLoop``): with
  evictions that take no time, these arrivals let preemptions undo each other. The 6,462
  admissions before that are the same on every revision, which is all a count needs.

    .venv/bin/python benchmarks/instructions.py [--json FILE]
    .venv/bin/python benchmarks/instructions.py --compare REF

``--compare REF`` counts REF's core on the same mixes (this script drives both) and prints
the ratios. Needs valgrind (Debian: ``apt-get install valgrind``) and the compiled core
(``make compile``): the count starts and stops at the compiled ``run_cycle``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compare import ROOT, core, environment, load, match_core, worktree

MIXES = ("baseline", "one per instant")
OFFSET_S = 0.0031
"""Between one ClusterQueue's arrivals and the next queue's, in the ``one per instant`` mix."""
RUN_CYCLE = "CPyDef_scheduler___scheduler___Scheduler___run_cycle"
"""The compiled ``Scheduler.run_cycle``: callgrind counts only while it runs."""


def drive(mix: str) -> dict[str, Any]:
    """Run one mix through the core in this process (the tree on ``sys.path`` decides which
    core); returns what was decided, which must not differ between revisions."""
    import admission  # beside this script; its kq is the tree's on PYTHONPATH

    from kq import heap
    from kq.config import PluginsConfig
    from kq.observability.logs import configure_logging
    from kq.plugins import build_plugin_manager
    from kq.scheduler.plugins import load_admission_plugins
    from kq.simulate.engine import Engine

    configure_logging("info")
    plugins = load_admission_plugins(build_plugin_manager(PluginsConfig()), None)
    offset = OFFSET_S if mix == "one per instant" else 0.0
    scheduler, arrivals, stats = admission.baseline_mix(plugins, offset)
    engine = Engine(scheduler, arrivals, stats)
    with heap.settled():
        makespan = engine.run()
    return {
        "admissions": stats.admissions,
        "evictions": stats.evictions,
        "cycles": engine.cycles,
        "makespan": makespan,
    }


@dataclass
class _Count:
    """One mix on one tree, running under callgrind, which writes its counts to ``path``."""

    process: subprocess.Popen[str]
    path: str


def count(tree: Path, mix: str) -> _Count:
    """Start ``mix`` on ``tree``'s core under callgrind; ``finish`` reads the count."""
    handle, path = tempfile.mkstemp(suffix=".callgrind")
    os.close(handle)
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={path}",
        f"--toggle-collect={RUN_CYCLE}",
        sys.executable,
        str(Path(__file__).resolve()),
        "--drive",
        mix,
    ]
    process = subprocess.Popen(
        command,
        cwd=tree,
        env=environment(tree),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return _Count(process, path)


def finish(running: _Count) -> dict[str, Any]:
    stdout, stderr = running.process.communicate()
    text = Path(running.path).read_text()
    os.unlink(running.path)
    found = re.search(r"^summary:\s+(\d+)", text, re.MULTILINE)
    code = running.process.returncode
    if code != 0 or found is None:
        raise SystemExit(f"callgrind run failed (exit {code}):\n{stderr[-2000:]}")
    decided: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    instructions = int(found.group(1))
    if instructions == 0:  # kq fell back to its Python core: sources edited since compiling
        raise SystemExit("the compiled run_cycle never ran: is the core stale? (make compile)")
    return {
        **decided,
        "instructions": instructions,
        "perAdmission": instructions / max(1, decided["admissions"]),
    }


def measure(trees: list[Path]) -> list[dict[str, dict[str, Any]]]:
    """Every mix on every tree, two callgrind runs at a time (one per CPU here)."""
    jobs = [(tree, mix) for mix in MIXES for tree in trees]
    results: list[dict[str, dict[str, Any]]] = [{} for _ in trees]
    for start in range(0, len(jobs), 2):
        batch = [(tree, mix, count(tree, mix)) for tree, mix in jobs[start : start + 2]]
        for tree, mix, process in batch:
            results[trees.index(tree)][mix] = finish(process)
    return results


def show(mix: str, found: dict[str, Any]) -> None:
    print(
        f"  {mix:<16} {found['instructions'] / 1e9:6.2f} G instructions in run_cycle  "
        f"{found['perAdmission'] / 1e3:7.0f} k per admission  "
        f"({found['admissions']} admissions, {found['cycles']} cycles, "
        f"{found['evictions']} evictions)"
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--drive", choices=MIXES, help=argparse.SUPPRESS)
    parser.add_argument("--compare", metavar="REF", help="git revision to compare against")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.drive is not None:
        print(json.dumps(drive(args.drive)))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if core(ROOT) != "compiled":
        raise SystemExit("the core is not compiled (make compile): callgrind counts its run_cycle")
    trees = [ROOT]
    if args.compare is not None:
        other = worktree(args.compare)
        match_core(other)
        if core(other) != "compiled":
            raise SystemExit(f"{args.compare} has no compiled core to count")
        trees.append(other)
    print(load())
    results = measure(trees)
    print("== this tree ==")
    for mix in MIXES:
        show(mix, results[0][mix])
    report: dict[str, Any] = {"this": results[0]}
    if args.compare is not None:
        print(f"== {args.compare} ==")
        for mix in MIXES:
            show(mix, results[1][mix])
        report["ref"] = results[1]
        print("  ratio (this / REF) of instructions per admission:")
        for mix in MIXES:
            mine, theirs = results[0][mix], results[1][mix]
            same = {k: mine[k] for k in ("admissions", "evictions", "cycles", "makespan")} == {
                k: theirs[k] for k in ("admissions", "evictions", "cycles", "makespan")
            }
            ratio = mine["perAdmission"] / theirs["perAdmission"]
            print(f"    {mix:<16} {ratio:5.3f}  decisions {'identical' if same else 'DIFFER'}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
