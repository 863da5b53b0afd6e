"""Search random setups for a scheduling livelock: more cycles at one virtual instant than a
bound, in the engine ``kq simulate`` and mode A use.

Each seed builds ClusterQueues in cohorts (names ``cq-COHORT-I``), two flavors of cpu and
memory, random quotas and preemption/fungibility policies, and a random trace; a seed whose
run exceeds ``--bound`` cycles at one instant is printed with the instant, the cycles'
evictions and the last cycle's decisions.

    .venv/bin/python tools/cycles_per_instant.py [--seeds 0:40] [--bound 500] [--workloads 100]
"""

from __future__ import annotations

import argparse
import logging
import random
import tempfile
from pathlib import Path
from typing import Any

import structlog
import yaml

from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Victim
from kq.simulate.engine import Engine, Listener
from kq.simulate.run import prepare
from kq.simulate.setup import load_setup

FLAVORS = ("f0", "f1")
API = "kueue.x-k8s.io/v1beta1"


def _quota(rng: random.Random, name: str, high: int, unit: str) -> dict[str, Any]:
    nominal = rng.randint(0, high)
    quota: dict[str, Any] = {"name": name, "nominalQuota": f"{nominal}{unit}"}
    if rng.random() < 0.5:
        quota["borrowingLimit"] = f"{rng.randint(0, high // 2)}{unit}"
    if rng.random() < 0.3:
        quota["lendingLimit"] = f"{rng.randint(0, nominal)}{unit}"
    return quota


def _cluster_queue(rng: random.Random, name: str, cohort: str) -> dict[str, Any]:
    flavors = [
        {"name": f, "resources": [_quota(rng, "cpu", 8, ""), _quota(rng, "memory", 16, "Gi")]}
        for f in FLAVORS
    ]
    reclaim = rng.choice(["Never", "Any", "LowerPriority"])
    preemption: dict[str, Any] = {
        "withinClusterQueue": rng.choice(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
        "reclaimWithinCohort": reclaim,
    }
    borrow_within = rng.choice(["Never", "LowerPriority"])
    if reclaim != "Never":
        preemption["borrowWithinCohort"] = {"policy": borrow_within}
    spec = {
        "namespaceSelector": {},
        "cohort": cohort,
        "queueingStrategy": rng.choice(["BestEffortFIFO", "StrictFIFO"]),
        "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": flavors}],
        "preemption": preemption,
        "flavorFungibility": {
            "whenCanBorrow": rng.choice(["Borrow", "TryNextFlavor"]),
            "whenCanPreempt": rng.choice(["Preempt", "TryNextFlavor"]),
        },
    }
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def setup(rng: random.Random, cohorts: int, per_cohort: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": f}} for f in FLAVORS
    ]
    for c in range(cohorts):
        for i in range(per_cohort):
            name = f"cq-{c}-{i}"
            objects.append(_cluster_queue(rng, name, f"co-{c}"))
            spec = {"clusterQueue": name}
            lq = {"namespace": "default", "name": name}
            objects.append({"apiVersion": API, "kind": "LocalQueue", "metadata": lq, "spec": spec})
    return objects


def trace(rng: random.Random, n: int, cohorts: int, per_cohort: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"w{i}",
            "arrival": rng.randint(0, 20),
            "queue": f"default/cq-{rng.randrange(cohorts)}-{rng.randrange(per_cohort)}",
            "runtime": rng.randint(1, 10),
            "priority": rng.randint(0, 3),
            "count": rng.randint(1, 2),
            "requests": {"cpu": rng.randint(1, 4), "memory": f"{rng.randint(1, 8)}Gi"},
        }
        for i in range(1, n + 1)
    ]


class Stuck(Exception):
    pass


class Bound(Listener):
    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.at: float | None = None
        self.cycles = self.evictions = 0

    def evicted(self, victim: Victim, preemptor: str, now: float) -> None:
        self.evictions += 1

    def cycled(self, result: CycleResult, now: float, seconds: float) -> None:
        if now != self.at:
            self.at, self.cycles, self.evictions = now, 0, 0
        self.cycles += 1
        if self.cycles > self.bound:
            decided = ", ".join(f"{type(d).__name__} {d.key}" for d in result.decisions)
            raise Stuck(f"at {now}: {self.evictions} evictions; last cycle: {decided}")


def run(seed: int, bound: int, workloads: int, cohorts: int, per_cohort: int) -> str | None:
    """Why the seed got stuck, or None."""
    rng = random.Random(seed)
    objects = setup(rng, cohorts, per_cohort)
    entries = trace(rng, workloads, cohorts, per_cohort)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "setup.yaml"
        path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
        prepared = prepare(f"seed {seed}", load_setup([path]), entries)
    try:
        Engine(prepared.core.scheduler, prepared.arrivals, Bound(bound)).run()
    except Stuck as stuck:
        return str(stuck)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", default="0:40", help="FIRST:END (END excluded)")
    parser.add_argument("--bound", type=int, default=500, help="cycles at one instant")
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--cohorts", type=int, default=2)
    parser.add_argument("--per-cohort", type=int, default=4)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    first, end = (int(x) for x in args.seeds.split(":"))
    stuck = 0
    for seed in range(first, end):
        why = run(seed, args.bound, args.workloads, args.cohorts, args.per_cohort)
        if why is not None:
            stuck += 1
            print(f"seed {seed}: {why}", flush=True)
    print(f"{stuck} of {end - first} seeds over {args.bound} cycles at one instant")


if __name__ == "__main__":
    main()
