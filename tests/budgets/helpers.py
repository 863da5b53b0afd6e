"""Budgets, queues and workloads for the budget tests."""

from __future__ import annotations

from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.resources import BUDGETS
from tests.controllers.helpers import condition, workload


def budget(
    name: str,
    target: dict[str, str],
    hours: dict[str, str],
    duration: str = "1h",
    alignment: str = "Rolling",
) -> dict[str, Any]:
    return {
        "apiVersion": "kq.dev/v1alpha1",
        "kind": "Budget",
        "metadata": {"name": name},
        "spec": {
            "target": target,
            "window": {"duration": duration, "alignment": alignment},
            "resourceHours": hours,
        },
    }


def bounded(ns: str, name: str, queue: str, cpu: int, seconds: int) -> dict[str, Any]:
    """A Workload of ``cpu`` cores that kq stops after ``seconds`` of admitted time."""
    return workload(ns, name, queue, {"cpu": cpu}, maximumExecutionTimeSeconds=seconds)


def pending_message(obj: dict[str, Any]) -> str:
    cond = condition(obj, "QuotaReserved") or {}
    return str(cond.get("message", "")) if cond.get("status") == "False" else ""


async def budget_status(client: KubeClient, name: str) -> dict[str, Any]:
    obj = await client.get(BUDGETS, name)
    return dict(obj.get("status") or {})


def hours(status: dict[str, Any], field: str, resource: str = "cpu") -> float:
    return float((status.get(field) or {}).get(resource, "nan"))
