"""Mode A's decisions as a digest: admission order, times, flavors and evictions.

Performance work on the core must not change a single decision. ``digest(name)`` runs one
fixed mix on the virtual clock and hashes every event in order; ``tests/simulate/
test_decision_digest.py`` pins the digests recorded at the revision before the work began.

    .venv/bin/python benchmarks/decisions.py # prints each mix's digest and counts
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass

from admission import baseline_arrivals, cluster

from kq.config import FairSharing, PluginsConfig
from kq.observability.logs import configure_logging
from kq.plugins import build_plugin_manager
from kq.scheduler.decisions import Admit, Victim
from kq.scheduler.plugins import AdmissionPlugins, load_admission_plugins
from kq.scheduler.scheduler import Scheduler
from kq.simulate.engine import Engine, Listener
from kq.simulate.trace import Arrival


class Recorder(Listener):
    """Every admission and eviction, in the order the engine reports them."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.admissions = self.evictions = 0

    def admitted(self, decision: Admit, now: float) -> None:
        self.admissions += 1
        assignments = [
            (p.name, sorted(p.flavors.items()), sorted(p.resource_usage.items()), p.count)
            for p in decision.admission.pod_set_assignments
        ]
        self._add(("A", repr(now), decision.key, decision.admission.cluster_queue, assignments))

    def evicted(self, victim: Victim, preemptor: str, now: float) -> None:
        self.evictions += 1
        self._add(("E", repr(now), victim.key, preemptor))

    def _add(self, event: object) -> None:
        self.hash.update(repr(event).encode())
        self.hash.update(b"\n")


@dataclass(frozen=True)
class Outcome:
    digest: str
    admissions: int
    evictions: int
    cycles: int
    makespan: float


def run(scheduler: Scheduler, arrivals: list[Arrival]) -> Outcome:
    recorder = Recorder()
    engine = Engine(scheduler, arrivals, recorder)
    now = engine.run()
    return Outcome(
        recorder.hash.hexdigest(), recorder.admissions, recorder.evictions, engine.cycles, now
    )


def _plugins(fair_sharing: bool) -> AdmissionPlugins:
    strategies = FairSharing().preemption_strategies if fair_sharing else None
    return load_admission_plugins(build_plugin_manager(PluginsConfig()), strategies)


def baseline(fair_sharing: bool = False) -> Outcome:
    """Kueue's baseline mix, as ``benchmarks/admission.py`` runs it."""
    scheduler = cluster(_plugins(fair_sharing), 5, 6, nominal=20, borrowing=100)
    return run(scheduler, baseline_arrivals(scheduler))


MIXES: dict[str, Callable[[], Outcome]] = {
    "baseline": baseline,
    "baseline-fair-sharing": lambda: baseline(fair_sharing=True),
}


def main(argv: list[str]) -> None:
    configure_logging("info")  # as ``kq run``: the core's debug lines are not built
    for name in argv or list(MIXES):
        outcome = MIXES[name]()
        print(json.dumps({"mix": name, **dataclasses.asdict(outcome)}))


if __name__ == "__main__":
    main(sys.argv[1:])
