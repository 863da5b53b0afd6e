"""The chaos suite's long run (issue 18): kq under a seeded storm of faults, with figures.

Starts ``kq apiserver --enable-fault-injection`` on loopback and ``--replicas`` ``kq run``
processes against it, submits a flowing mix of Workloads and Jobs to four ClusterQueues (three
in a cohort, with borrowing, lending, preemption and StrictFIFO), and for ``--duration`` seconds
injects, one after another: kill -9 of the leader and of a follower, SIGSTOP of the leader,
SIGTERM hand-overs, dropped watches, compaction (410 on resume), 409/429/5xx storms, slow
answers (2.5 s on leases outlasts the renew deadline), and kill -9 of the API server. Every
sample (a LIST of all Workloads) is checked for quota over-commit and double admission; after
the storm everything must converge. Prints faults injected, recoveries, time to converge and
every violation; exits 1 if any invariant broke.

    .venv/bin/python benchmarks/chaos.py [--seed 18] [--duration 120] [--replicas 3]
        [--submit-every 0.1] [--faults kill-leader,errors,...] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

# The engine lives with the tests (tests/chaos), whose short run is part of `make test`.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kq.observability.logs import configure_logging
from tests.chaos.faults import KINDS
from tests.chaos.processes import Election
from tests.chaos.storm import StormConfig, run_storm


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of faults")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument(
        "--submit-every", type=float, default=0.15, help="seconds between submissions"
    )
    parser.add_argument("--converge-within", type=float, default=120.0)
    parser.add_argument(
        "--faults", default=",".join(KINDS), help="kinds to inject, comma-separated"
    )
    parser.add_argument("--lease-duration", type=float, default=3.0)
    parser.add_argument(
        "--workdir", type=Path, help="keep logs here (default: a temporary directory)"
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    kinds = tuple(k for k in args.faults.split(",") if k)
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise SystemExit(f"unknown fault kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    configure_logging("warning")  # the harness's own client retries are expected here
    lease = args.lease_duration
    election = Election(lease, renew_deadline=lease * 2 / 3, retry_period=lease / 6)
    with tempfile.TemporaryDirectory(prefix="kq-chaos-") as scratch:
        config = StormConfig(
            workdir=args.workdir or Path(scratch),
            seed=args.seed,
            duration=args.duration,
            replicas=args.replicas,
            submit_every=args.submit_every,
            converge_within=args.converge_within,
            kinds=kinds,
            election=election,
        )
        started = time.monotonic()
        report = asyncio.run(run_storm(config))
    print("\n".join(report.lines()))
    print(f"wall: {time.monotonic() - started:.1f} s")
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
