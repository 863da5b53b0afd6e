"""``whenExhausted: LowerPriority``: the controller writes Kueue's priority boost on a Workload
a LowerPriority budget cannot afford, and kq's core orders and preempts it lower from then on.

The boost is the ``kueue.x-k8s.io/priority-boost`` annotation (Kueue users know it, ``kubectl``
shows it, it survives a restart of kq), added to any boost the Workload had, and marked with
``kq.dev/lowered-by-budget: <budget>`` so that kq honours it without the ``PriorityBoost`` gate
and the veto lets the workload in. A lowered workload stays lowered.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

import structlog

from kq.plugin import (
    LOWERED_BY_BUDGET_ANNOTATION,
    PRIORITY_BOOST_ANNOTATION,
    WORKLOADS,
    ApiError,
    Budget,
    ControllerContext,
    EventRecorder,
    Resource,
    boost_error,
)
from kq_plugins.budgets.book import Book

log = structlog.get_logger("kq_plugins.budgets")
REASON = "LoweredByBudget"
_INT32 = (-(2**31), 2**31 - 1)


def annotations_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def lowered_patch(obj: Mapping[str, Any], budget: Budget) -> tuple[dict[str, Any], int, int]:
    """The merge patch lowering ``obj`` by ``budget``'s boost; its priority before and after."""
    current = annotations_of(obj).get(PRIORITY_BOOST_ANNOTATION)
    base = int(current) if isinstance(current, str) and boost_error(current) is None else 0
    boost = max(_INT32[0], min(_INT32[1], base + budget.priority_boost))
    priority = int(((obj.get("spec") or {}).get("priority")) or 0)
    patch = {"metadata": {"annotations": {
        PRIORITY_BOOST_ANNOTATION: str(boost), LOWERED_BY_BUDGET_ANNOTATION: budget.name,
    }}}  # fmt: skip
    return patch, priority + base, priority + boost


def obj_key(meta: Mapping[str, Any]) -> str:
    return f"{meta['namespace']}/{meta['name']}"


@runtime_checkable
class InMemory(Protocol):
    """A simulation's context: it applies a merge patch to its own Workloads at once."""

    def merge_patch(self, resource: Resource, key: str, patch: Mapping[str, Any]) -> None: ...


def due(ctx: ControllerContext, book: Book) -> Iterator[tuple[dict[str, Any], Budget]]:
    """The Workloads the veto asked to lower that still need it, each with its budget."""
    store = ctx.store(WORKLOADS)
    for key, budget in list(book.to_lower.items()):
        del book.to_lower[key]
        obj = store.get(key)
        if obj is None or LOWERED_BY_BUDGET_ANNOTATION in annotations_of(obj):
            continue
        if (obj.get("status") or {}).get("admission") is not None:
            continue  # it got quota meanwhile (another budget's room, say): nothing to lower
        yield obj, budget


def lower_in_memory(ctx: ControllerContext, book: Book) -> bool:
    """``kq simulate``: the lowering written to the simulation's own Workloads; whether any."""
    if not isinstance(ctx, InMemory):
        return False
    wrote = False
    for obj, budget in due(ctx, book):
        patch, _, _ = lowered_patch(obj, budget)
        meta = obj["metadata"]
        ctx.merge_patch(WORKLOADS, obj_key(meta), patch)
        wrote = True
    return wrote


async def lower_all(ctx: ControllerContext, book: Book, events: EventRecorder) -> bool:
    """Write the lowering the veto asked for; whether any was written."""
    wrote = False
    for obj, budget in due(ctx, book):
        patch, before, after = lowered_patch(obj, budget)
        meta = obj["metadata"]
        try:
            await ctx.client.merge_patch(
                WORKLOADS, meta["name"], patch, namespace=meta["namespace"],
                resource_version=meta.get("resourceVersion"),
            )  # fmt: skip
        except ApiError as exc:  # 409: the veto asks again with the newer object
            if exc.status not in (404, 409):
                log.warning("priority not lowered", workload=obj_key(meta), error=str(exc))
            continue
        wrote = True
        message = (
            f"budget {budget.name} is exhausted (whenExhausted: LowerPriority): admitted at "
            f"priority {after} instead of {before} (priorityBoost {budget.priority_boost})"
        )
        await events.record(obj, "Normal", REASON, message)
    return wrote
