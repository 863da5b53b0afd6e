"""One simulation end to end: setup in, a ``Run`` (core, records, samples) out."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kq import heap
from kq.simulate.engine import Engine, PreemptionLoop
from kq.simulate.model import Core, Model, build_core, parse_model
from kq.simulate.plugin_controllers import PluginControllers, budgets_of
from kq.simulate.record import Progress, Recorder
from kq.simulate.setup import Setup
from kq.simulate.trace import Arrival, load_trace


@dataclass
class Run:
    label: str
    model: Model
    core: Core
    recorder: Recorder
    end: float
    """The last virtual instant simulated."""
    wall: float
    """Wall-clock seconds the simulation took (parsing excluded)."""
    pending: list[str]
    """Workloads that arrived and never got (back) their quota."""
    loop: PreemptionLoop | None = None
    """Set when the run stopped early on a preemption loop."""


@dataclass
class Prepared:
    """A setup parsed and a trace read against it: everything checked, nothing simulated."""

    label: str
    model: Model
    core: Core
    arrivals: list[Arrival]
    setup: Setup | None = None


def prepare(label: str, setup: Setup, trace: Path | Sequence[Mapping[str, Any]]) -> Prepared:
    """Parse and check everything first: bad input stops before any simulation."""
    model = parse_model(setup)
    budgets_of(setup)  # checked as kq's webhook would, before anything is simulated
    core = build_core(setup, model)
    return Prepared(label, model, core, load_trace(trace, model), setup)


def simulate(
    prepared: Prepared, progress: Progress | None = None, until: float | None = None
) -> Run:
    recorder = Recorder(prepared.core, prepared.arrivals, progress)
    listener = PluginControllers(prepared.setup or Setup(), prepared.model, prepared.core, recorder)
    engine = Engine(prepared.core.scheduler, prepared.arrivals, listener)
    listener.bind(engine)
    started = time.perf_counter()
    with heap.settled():
        end = engine.run(until)
    wall = time.perf_counter() - started
    return Run(
        prepared.label,
        prepared.model,
        prepared.core,
        recorder,
        end,
        wall,
        engine.pending(),
        engine.loop,
    )
