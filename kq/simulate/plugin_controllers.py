"""Plugin controllers on the virtual clock: what ``kq run``'s informers would show them.

A controller that defines ``simulate(ctx)`` (see ``kq.plugins.controllers``) takes part: it is
called once before the trace, with caches of its ``WATCHES`` that this module keeps as the run
goes (Budgets, ClusterQueues and Cohorts from the setup; Workloads as they arrive, are
admitted, evicted and finish, with their conditions at virtual times), ``on_change`` callbacks
after each change, and ``ctx.now()`` the virtual time. It returns a ``step(now)`` called after
each instant, which answers when it wants to be called next (``None``: only at the next event):
a budget waits for its window to move, not only for the next arrival or finish; ``now``: again
at this instant, after another round of cycles.

A simulation writes nothing to an API server, but its context's ``merge_patch(resource, key,
patch)`` changes its own Workloads at once, as an update seen by kq run's feed would: the core
weighs a new ``kueue.x-k8s.io/priority-boost`` by its own rule (the budgets' LowerPriority).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from kq.api.priority import priority_boost
from kq.api.quantity import format_amount
from kq.budgets import KIND as BUDGET_KIND
from kq.budgets import BudgetError, parse_budget
from kq.plugins.controllers import SIMULATED, PluginController, Step
from kq.plugins.manager import build_plugin_manager
from kq.runtime.resources import BUDGETS, CLUSTER_QUEUES, COHORTS, WORKLOADS, Resource
from kq.runtime.store import Store
from kq.scheduler.cycle import CycleResult
from kq.scheduler.decisions import Admit, Victim
from kq.simulate.engine import Engine, Listener
from kq.simulate.model import Core, Model
from kq.simulate.setup import Setup, merge_patch
from kq.simulate.source import InputError
from kq.simulate.trace import Arrival

Obj = dict[str, Any]
SERVED = (BUDGETS, CLUSTER_QUEUES, COHORTS, WORKLOADS)
"""The kinds a simulation can show a plugin controller."""


def stamp(at: float) -> str:
    """RFC 3339 with the fraction: virtual instants are not whole seconds."""
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


class _Context:
    def __init__(self, stores: dict[Resource, Store], core: Core) -> None:
        self.stores = stores
        self.callbacks: dict[Resource, list[Callable[[], None]]] = {r: [] for r in stores}
        self.core = core
        self.now_at = 0.0
        self.patched: Callable[[Obj], None] = lambda _obj: None
        """Told of each Workload ``merge_patch`` changed."""

    @property
    def client(self) -> Any:
        raise RuntimeError("kq simulate writes nothing: a plugin controller has no client here")

    def store(self, resource: Resource) -> Store:
        return self.stores[resource]

    def on_change(self, resource: Resource, callback: Callable[[], None]) -> None:
        self.callbacks[resource].append(callback)

    def retry_vetoed(self) -> None:
        queues = self.core.queues
        queues.requeue_inadmissible(list(queues.queues))

    def now(self) -> float:
        return self.now_at

    def merge_patch(self, resource: Resource, key: str, patch: Mapping[str, Any]) -> None:
        """A plugin controller's write, applied in memory at once (no conflict can happen:
        nothing else writes while it runs)."""
        current = self.stores[resource].get(key)
        if current is None:
            return
        obj: Obj = merge_patch(current, dict(patch))
        self.changed(resource, obj)
        if resource == WORKLOADS:
            self.patched(obj)

    def changed(self, resource: Resource, obj: Obj) -> None:
        self.stores[resource].upsert(obj)
        for callback in self.callbacks[resource]:
            callback()


def budgets_of(setup: Setup) -> list[Obj]:
    """The setup's Budgets, each checked as kq's webhook would (errors name the file line)."""
    found = []
    for key, obj in setup.objects.items():
        if key[0] != BUDGET_KIND:
            continue
        try:
            parse_budget(obj)
        except BudgetError as exc:
            raise InputError(f"{setup.origins[key]}: Budget {key[1]}: {exc}") from None
        found.append(obj)
    return found


class PluginControllers(Listener):
    """A listener that keeps the simulated caches and passes every event on to ``inner``."""

    def __init__(self, setup: Setup, model: Model, core: Core, inner: Listener) -> None:
        self.inner = inner
        stores = {r: Store() for r in SERVED}
        for obj in budgets_of(setup):
            stores[BUDGETS].upsert(obj)
        for (kind, _), obj in setup.objects.items():
            if kind in ("ClusterQueue", "Cohort"):
                stores[CLUSTER_QUEUES if kind == "ClusterQueue" else COHORTS].upsert(obj)
        self.context = _Context(stores, core)
        self.context.patched = self._patched
        self.steps: list[Step] = []
        self.engine: Engine | None = None
        pm = build_plugin_manager(model.config.plugins)
        for cls in _registered(pm):
            if hasattr(cls, SIMULATED) and set(cls.WATCHES) <= set(SERVED):
                self.steps.append(getattr(cls(), SIMULATED)(self.context))

    def bind(self, engine: Engine) -> None:
        self.engine = engine

    # -- the workloads, as kq run's informer would see them ----------------------------------

    def arrived(self, arrival: Arrival, now: float, unqueueable: str | None) -> None:
        self.context.now_at = now
        workload = arrival.workload
        spec: Obj = {"queueName": workload.queue_name, "priority": workload.priority}
        if arrival.max_execution is not None:
            spec["maximumExecutionTimeSeconds"] = arrival.max_execution
        meta: Obj = {"namespace": workload.namespace, "name": workload.name, "uid": workload.key}
        if arrival.annotations:
            meta["annotations"] = dict(arrival.annotations)
        self.context.changed(WORKLOADS, {"metadata": meta, "spec": spec, "status": {}})
        self.inner.arrived(arrival, now, unqueueable)

    def admitted(self, decision: Admit, now: float) -> None:
        assignments = [
            {
                "name": psa.name,
                "count": psa.count,
                "resourceUsage": {r: format_amount(r, n) for r, n in psa.resource_usage.items()},
            }
            for psa in decision.admission.pod_set_assignments
        ]
        admission = {"clusterQueue": decision.admission.cluster_queue,
                     "podSetAssignments": assignments}  # fmt: skip
        conditions = [_condition("QuotaReserved", now), _condition("Admitted", now)]
        self._status(decision.key, now, {"admission": admission, "conditions": conditions})
        self.inner.admitted(decision, now)

    def evicted(self, victim: Victim, preemptor: str, now: float) -> None:
        conditions = [_condition("QuotaReserved", now, False), _condition("Admitted", now, False)]
        self._status(victim.key, now, {"admission": None, "conditions": conditions})
        self.inner.evicted(victim, preemptor, now)

    def finished(self, key: str, now: float) -> None:
        current = self.context.stores[WORKLOADS].get(key) or {}
        conditions = [*(current.get("status") or {}).get("conditions", []),
                      _condition("Finished", now)]  # fmt: skip
        self._status(key, now, {**(current.get("status") or {}), "conditions": conditions})
        self.inner.finished(key, now)

    def _status(self, key: str, now: float, status: Obj) -> None:
        self.context.now_at = now
        current = self.context.stores[WORKLOADS].get(key)
        if current is not None:
            self.context.changed(WORKLOADS, {**current, "status": status})

    def _patched(self, obj: Obj) -> None:
        """As the feed on a Workload update: the boost it now has, by the core's rule."""
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        arrival = None if self.engine is None else self.engine.arrivals.get(key)
        if self.engine is None or arrival is None:
            return
        annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
        boost = priority_boost(annotations, self.context.core.plugins.priority_boost)
        workload = dataclasses.replace(arrival.workload, priority_boost=boost)
        self.engine.update(dataclasses.replace(arrival, workload=workload, annotations=annotations))

    # -- time ---------------------------------------------------------------------------------

    def updated(self, arrival: Arrival) -> None:
        self.inner.updated(arrival)

    def cycled(self, result: CycleResult, now: float, seconds: float) -> None:
        self.inner.cycled(result, now, seconds)

    def settled(self, now: float) -> None:
        self.context.now_at = now
        wanted = [at for step in self.steps if (at := step(now)) is not None and at >= now]
        if wanted and self.engine is not None and self.engine.pending():
            self.engine.wake_at(min(wanted), self._woken)
        self.inner.settled(now)

    def _woken(self, now: float) -> None:
        self.context.now_at = now


def _condition(kind: str, at: float, status: bool = True) -> Obj:
    return {"type": kind, "status": "True" if status else "False", "lastTransitionTime": stamp(at)}


def _registered(pm: Any) -> list[type[PluginController]]:
    classes: list[type[PluginController]] = []
    pm.hook.kq_register_controllers(register=classes.append)
    return classes
