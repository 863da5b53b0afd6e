"""What a storm found, as figures: faults, recoveries, convergence and every invariant broken."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Report:
    seed: int
    plan: list[str] = field(default_factory=list)
    injected: Counter[str] = field(default_factory=Counter)
    submitted: int = 0
    create_retries: int = 0
    samples: int = 0
    failed_samples: int = 0
    admissions: int = 0
    evictions: int = 0
    finished: int = 0
    replica_restarts: int = 0
    apiserver_starts: int = 0
    exits: Counter[int] = field(default_factory=Counter)
    """Exit codes of replicas that exited on their own (1: leadership lost)."""
    handovers: list[tuple[str, float]] = field(default_factory=list)
    recoveries: list[tuple[str, float]] = field(default_factory=list)
    resumed_exits: list[float] = field(default_factory=list)
    storm_seconds: float = 0.0
    converge_seconds: float | None = None
    timeline: list[str] = field(default_factory=list)
    """Each fault as it started (wall clock), to read the violations against."""
    violations: list[str] = field(default_factory=list)
    """Broken invariants: over-commit, double admission, reopened finishes, lost objects,
    crashes, slow hand-overs, no convergence."""

    def lines(self) -> list[str]:
        def worst(pairs: list[tuple[str, float]]) -> str:
            times = [t for _, t in pairs]
            return f"{len(times)}, max {max(times):.2f} s" if times else "0"

        faults = ", ".join(f"{k} {n}" for k, n in sorted(self.injected.items()))
        converged = "never" if self.converge_seconds is None else f"{self.converge_seconds:.1f} s"
        stepped_down = f"{len(self.resumed_exits)}, max {max(self.resumed_exits, default=0):.2f} s"
        return [
            f"chaos seed {self.seed}: {self.storm_seconds:.1f} s of storm, {len(self.plan)} faults",
            f"faults injected: {sum(self.injected.values())} ({faults})",
            f"submitted: {self.submitted} (create retries {self.create_retries})",
            f"admissions: {self.admissions}, evictions: {self.evictions}, "
            f"finished: {self.finished}",
            f"samples checked: {self.samples}, failed: {self.failed_samples}",
            f"leader hand-overs: {worst(self.handovers)}",
            f"API server restarts, until the lease renewed: {worst(self.recoveries)}",
            f"paused leaders stepping down after SIGCONT: {stepped_down}",
            f"replica restarts: {self.replica_restarts}, exits on their own by code: "
            f"{dict(self.exits)}, API server starts: {self.apiserver_starts}",
            f"converged {converged} after the storm",
            f"invariant violations: {len(self.violations)}",
            *(f"  VIOLATION {v}" for v in self.violations[:50]),
            *(
                ["fault timeline:", *(f"  {line}" for line in self.timeline)]
                if self.violations
                else []
            ),
        ]
