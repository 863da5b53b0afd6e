"""The built-in ``budgets`` plugin: resource-time budgets per window (``budgets.kq.dev``).

A veto keeps a workload pending while admitting it could take a budget covering its queue past
its limit (or, by the budget's ``whenExhausted``, lets it in at a lower priority, or on borrowed
capacity only: ``kq_admission_terms``); a controller keeps every budget's ledger and status and
writes the lowering. All share one in-memory book.
"""

from __future__ import annotations

from kq.plugin import AdmissionTerms, Admit, ClusterQueue, Register, WorkloadInfo, hookimpl
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
def kq_admission_terms(
    workload: WorkloadInfo, cluster_queue: ClusterQueue
) -> AdmissionTerms | None:
    return BOOK.terms(workload)


@hookimpl
def kq_on_decision(decision: object) -> None:
    if isinstance(decision, Admit):
        BOOK.admitted(decision.key)


@hookimpl
def kq_on_cycle_end() -> None:
    BOOK.cycle_end()
