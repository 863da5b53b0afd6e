"""The budgets' Prometheus gauges, on kq's registry (``/metrics`` of ``kq run`` and ``kq dev``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from kq.plugin import METRICS_REGISTRY, Budget, resource_hours
from kq_plugins.budgets.ledger import Account

LABELS = ("budget", "resource")
limit = Gauge(
    "kq_budget_limit_resource_hours",
    "Resource-hours a budget allows per window",
    LABELS,
    registry=METRICS_REGISTRY,
)
consumed = Gauge(
    "kq_budget_consumed_resource_hours",
    "Resource-hours admitted workloads consumed in the budget's current window",
    LABELS,
    registry=METRICS_REGISTRY,
)
reserved = Gauge(
    "kq_budget_reserved_resource_hours",
    "Resource-hours running workloads may still consume, up to their maximum execution time",
    LABELS,
    registry=METRICS_REGISTRY,
)
ticks = Counter(
    "kq_budget_controller_ticks",
    "Passes of the budgets controller: each brings the ledgers up to date, writes the statuses "
    "that moved and has the workloads budgets kept waiting tried again",
    registry=METRICS_REGISTRY,
)
_known: set[tuple[str, str]] = set()


def observe(budget: Budget, account: Account) -> None:
    for resource, allowed in budget.limits.items():
        labels = (budget.name, resource)
        _known.add(labels)
        limit.labels(*labels).set(resource_hours(resource, allowed))
        consumed.labels(*labels).set(resource_hours(resource, account.consumed.get(resource, 0)))
        reserved.labels(*labels).set(resource_hours(resource, account.reserved.get(resource, 0)))


def forget(budgets: set[str]) -> None:
    """Drop the series of budgets that are gone."""
    for labels in [k for k in _known if k[0] not in budgets]:
        _known.discard(labels)
        for gauge in (limit, consumed, reserved):
            gauge.remove(*labels)
