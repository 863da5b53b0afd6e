"""What the veto reads and the controller keeps up to date: every budget's ledger, in memory.

The veto runs inside the scheduling cycle, synchronous and without I/O, so the controller
(``controller.py``) rebuilds this book from the API's Budgets and Workloads, and the hooks add
what the cycle itself granted before any write comes back through a watch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kq.plugin import (
    BORROW,
    LOWER_PRIORITY,
    AdmissionTerms,
    Budget,
    ClusterQueue,
    WorkloadInfo,
    resource_hours,
)
from kq_plugins.budgets.ledger import Account, Entry, account, need, shortfall

GRANT_TTL_S = 60.0
"""How long a grant the cycle made counts before the Workload shows it holds quota."""
NO_BOUND = (
    "budget {name}: the workload sets no spec.maximumExecutionTimeSeconds (label "
    "kueue.x-k8s.io/max-exec-time-seconds on its job), so what it would consume is unbounded"
)
NOT_READY = "budgets: kq is reading the Budgets and their ledgers; tried again in a moment"
LOWERING = "; whenExhausted: LowerPriority: kq is lowering its priority by {by}"
BORROWING = "; whenExhausted: Borrow: admitted only on capacity borrowed from the cohort"
Need = dict[str, float]


@dataclass
class Ledger:
    """One budget and the admissions counted against it."""

    budget: Budget
    entries: list[Entry] = field(default_factory=list)
    holding: dict[str, Need] = field(default_factory=dict)
    """Workloads holding quota, not admitted yet (checks pending): their whole need."""
    _last: tuple[float, Account] | None = field(default=None, repr=False, compare=False)
    """What ``entries`` count at one instant: a cycle's vetoes ask it again and again."""

    def touch(self) -> None:
        """``entries`` changed beyond what ``replaced`` was told."""
        self._last = None

    def replaced(self, now: float, old: Entry | None, new: Entry | None) -> None:
        """One entry changed at ``now``: the instant's account follows it by the difference."""
        if self._last is None or self._last[0] != now:
            self._last = None
            return
        start = self.budget.window.start(now)
        before = account([old] if old else [], start, now)
        after = account([new] if new else [], start, now)
        self._last = (now, self._last[1].moved(before, after))

    def account(self, now: float, extra: list[Need] | None = None) -> Account:
        if self._last is None or self._last[0] != now:
            self._last = (now, account(self.entries, self.budget.window.start(now), now))
        return self._last[1].plus([*self.holding.values(), *(extra or ())])


class Book:
    """Budgets by name, and the scope each covers."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.ledgers: dict[str, Ledger] = {}
        self.cohort_parents: dict[str, str | None] = {}
        self.seconds_left: Callable[[str], float | None] = lambda _key: None
        """Per workload key, its ``maximumExecutionTimeSeconds`` not yet used, if it has one."""
        self._granted: dict[str, tuple[float, dict[str, Need]]] = {}
        self._tentative: dict[str, dict[str, Need]] = {}
        self.vetoed = False
        """Set by a veto; the controller clears it when it asks for a retry."""
        self.expected = False
        """kq will run the controller here (the Budget kind is served)."""
        self.ready = False
        """The controller has read the Budgets and Workloads once."""
        self.stale = False
        """A Budget changed since the last sync: the veto syncs first (a new budget counts
        from the next cycle on, not from the controller's next tick)."""
        self.refresh: Callable[[], None] = lambda: None
        self.lowered_by: Callable[[str], str | None] = lambda _key: None
        """Per workload key, the budget that lowered its priority, if one did."""
        self.can_lower = False
        """A controller writes the lowering (``kq run``, ``kq dev``): else LowerPriority waits."""
        self.to_lower: dict[str, Budget] = {}
        """Pending workloads a LowerPriority budget lets in once their priority is lowered."""
        self.poke: Callable[[], None] = lambda: None
        """Wakes the controller (it has lowering to write)."""
        self._borrow_only: dict[str, AdmissionTerms] = {}
        """Heads of this cycle a Borrow budget lets in only on borrowed capacity."""

    def reset(self) -> None:
        """Forget every ledger and grant (a new simulation in the same process)."""
        self.ledgers.clear()
        self._granted.clear()
        self._tentative.clear()
        self.to_lower.clear()
        self._borrow_only.clear()
        self.vetoed = self.stale = False

    # -- scope --------------------------------------------------------------------------

    def cohorts_of(self, cohort: str | None) -> list[str]:
        """``cohort`` and its ancestors, nearest first (a cycle stops the walk)."""
        chain: list[str] = []
        while cohort is not None and cohort not in chain:
            chain.append(cohort)
            cohort = self.cohort_parents.get(cohort)
        return chain

    def covering(self, namespace: str, queue: str, cq: str, cohort: str | None) -> list[Ledger]:
        """The budgets whose target includes a workload of ``namespace/queue`` in ``cq``."""
        if not self.ledgers:
            return []  # asked of every head: no cohort chain to walk when there are no budgets
        cohorts = self.cohorts_of(cohort)
        found = []
        for ledger in self.ledgers.values():
            target = ledger.budget.target
            if (
                (target.kind == "ClusterQueue" and target.name == cq)
                or (target.kind == "Cohort" and target.name in cohorts)
                or (
                    (target.kind == "LocalQueue" and target.namespace == namespace)
                    and target.name == queue
                )
            ):
                found.append(ledger)
        return found

    # -- the veto -----------------------------------------------------------------------

    def veto(self, info: WorkloadInfo, cq: ClusterQueue) -> str | None:
        """Why admitting ``info`` now would exceed a budget, or ``None`` (and it is counted)."""
        if self.expected and not self.ready:
            self.vetoed = True
            return NOT_READY
        if self.stale:
            self.refresh()
        self._borrow_only.pop(info.key, None)
        workload = info.obj
        ledgers = self.covering(workload.namespace, workload.queue_name, cq.name, cq.cohort)
        if not ledgers:
            return None
        usage = requested(info)
        now = self.clock()
        wanted: dict[str, Need] = {}
        for ledger in ledgers:
            budget = ledger.budget
            if not any(usage.get(r) for r in budget.limits):
                continue
            seconds = self.seconds_left(info.key)
            if seconds is None:  # only a change of the workload can help: no retry
                return NO_BOUND.format(name=budget.name)
            wanted[budget.name] = need(usage, seconds)
            current = ledger.account(now, self._pending(budget.name, info.key))
            short = shortfall(budget.limits, current, wanted[budget.name])
            if short is None:
                continue
            if budget.policy == BORROW:
                reason = exhausted_message(budget, *short) + BORROWING
                self._borrow_only.setdefault(info.key, AdmissionTerms(True, reason))
                self.vetoed = True  # as time passes it may go in as usual
                continue
            if budget.policy == LOWER_PRIORITY and self.can_lower:
                if self.lowered_by(info.key) is not None:
                    continue  # in at its lowered priority: this budget holds it no longer
                self.to_lower[info.key] = budget
                self.poke()
                by = -budget.priority_boost
                return exhausted_message(budget, *short) + LOWERING.format(by=by)
            # Worth trying again as time passes only if it fits an empty window.
            self.vetoed |= shortfall(budget.limits, Account(), wanted[budget.name]) is None
            return exhausted_message(budget, *short)
        self._tentative[info.key] = wanted
        return None

    def terms(self, info: WorkloadInfo) -> AdmissionTerms | None:
        """What the veto just decided for ``info``: borrowing only, if a Borrow budget said so."""
        return self._borrow_only.get(info.key)

    def _pending(self, budget: str, skip: str) -> list[Need]:
        """Needs granted or tentatively allowed that no Workload shows yet."""
        needs = [n[budget] for k, (_, n) in self._granted.items() if k != skip and budget in n]
        needs += [n[budget] for k, n in self._tentative.items() if k != skip and budget in n]
        return needs

    def admitted(self, key: str) -> None:
        """The cycle admitted ``key``: its need counts until the Workload shows quota."""
        wanted = self._tentative.pop(key, None)
        if wanted:
            self._granted[key] = (self.clock(), wanted)

    def cycle_end(self) -> None:
        self._tentative.clear()
        self._borrow_only.clear()

    def seen_holding(self, keys: set[str]) -> None:
        """Grants of workloads now seen holding quota (or too old) count from the ledger."""
        oldest = self.clock() - GRANT_TTL_S
        self._granted = {k: v for k, v in self._granted.items() if k not in keys and v[0] >= oldest}

    def granted(self, budget: str) -> list[Need]:
        return [n[budget] for _, n in self._granted.values() if budget in n]


def requested(info: WorkloadInfo) -> dict[str, int]:
    """What the workload would hold, all pod sets at full count, in Kueue units."""
    total: dict[str, int] = {}
    reclaimable = info.obj.reclaimable_pods
    for pod_set in info.obj.pod_sets:
        count = pod_set.count - reclaimable.get(pod_set.name, 0)
        for resource, amount in pod_set.requests.items():
            total[resource] = total.get(resource, 0) + amount * count
    return total


def number(value: float) -> str:
    """9,940 or 2.5 or 0.0125: thousands separated, at most four significant decimals."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


def exhausted_message(budget: Budget, resource: str, used: float, wanted: float) -> str:
    """Kq's pending message for a workload a budget keeps waiting."""
    limit = budget.limits[resource]
    available = max(0.0, limit - used)
    unit = f"{resource}-hours"

    def h(amount: float) -> str:
        return number(resource_hours(resource, amount))

    return (
        f"budget {budget.name} {resource}: {h(used)} of {h(limit)} {unit} used or reserved in "
        f"the window; {h(available)} available, needs {h(wanted)}"
    )
