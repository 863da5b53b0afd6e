"""Validation of kq's Budgets (``budgets.kq.dev``): what the CRD schema cannot say clearly."""

from __future__ import annotations

from typing import Any

from kq.budgets import BudgetError, parse_budget
from kq.webhooks.review import Review, allowed, denied


def validate_budget(uid: str, request: dict[str, Any]) -> Review:
    """Refuse a Budget kq could not enforce (zero window, unknown resource, ...), naming the
    field; status writes are kq's own and pass."""
    if request.get("operation") not in ("CREATE", "UPDATE") or request.get("subResource"):
        return allowed(uid)
    try:
        parse_budget(request.get("object") or {})
    except BudgetError as exc:
        return denied(uid, f"Budget {_name(request)} is invalid: {exc}")
    return allowed(uid)


def _name(request: dict[str, Any]) -> str:
    return str(((request.get("object") or {}).get("metadata") or {}).get("name", ""))
