"""The built-in ``budgets`` plugin: resource-time budgets per window (``budgets.kq.dev``).

A veto keeps a workload pending while admitting it could take a budget covering its queue past
its limit; a controller keeps every budget's ledger and status. Both share one in-memory book.
"""

from __future__ import annotations

from kq.plugin import Admit, ClusterQueue, Register, WorkloadInfo, hookimpl
from kq_plugins.budgets.book import Book
from kq_plugins.budgets.controller import BudgetController

BOOK = Book()
BudgetController.book = BOOK


@hookimpl
def kq_register_controllers(register: Register) -> None:
    register(BudgetController)


@hookimpl
def kq_workload_admissible(workload: WorkloadInfo, cluster_queue: ClusterQueue) -> str | None:
    return BOOK.veto(workload, cluster_queue)


@hookimpl
def kq_on_decision(decision: object) -> None:
    if isinstance(decision, Admit):
        BOOK.admitted(decision.key)


@hookimpl
def kq_on_cycle_end() -> None:
    BOOK.cycle_end()
