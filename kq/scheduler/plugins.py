"""The admission plugins a cycle uses, collected once from the ``kq_register_*`` hooks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy
from pluggy import HookCaller

from kq.api.clusterqueue import ClusterQueue
from kq.plugins import Registry, collect_registrations
from kq.queue.order import QueueOrder
from kq.queue.strategy import QueueingStrategy
from kq.scheduler.modes import AdmissionTerms
from kq.scheduler.protocols import FlavorAssigner, HotSwapPolicy, Preemptor
from kq.workload.info import WorkloadInfo

Veto = Callable[[WorkloadInfo, ClusterQueue], str | None]
Terms = Callable[[WorkloadInfo, ClusterQueue], AdmissionTerms | None]
OrderFor = Callable[[ClusterQueue], QueueOrder | None]


@dataclass(frozen=True)
class AdmissionPlugins:
    """Instances resolved by name; the hot loop calls them directly, never through pluggy."""

    strategies: Mapping[str, QueueingStrategy]
    assigners: Mapping[str, FlavorAssigner]
    preemptors: Mapping[str, Preemptor]
    veto: Veto | None = None
    hot_swaps: Mapping[str, HotSwapPolicy] = field(default_factory=dict)
    fair_sharing: tuple[str, ...] | None = None
    """Fair sharing's preemption strategies, when the configuration turns it on."""
    queue_order: OrderFor | None = None
    """``kq_queue_order``: a plugin's order of a ClusterQueue's pending workloads."""
    terms: Terms | None = None
    """``kq_admission_terms``, when a plugin implements it: how a head may be admitted."""
    priority_boost: bool = False
    """Feature gate ``PriorityBoost``: Workloads' ``kueue.x-k8s.io/priority-boost`` counts."""
    requeue_period: float = 0.0
    """Seconds between retries of a ClusterQueue's parked workloads (``kq.queue.pacing``)."""

    def order_for(self, cq: ClusterQueue) -> QueueOrder | None:
        return None if self.queue_order is None else self.queue_order(cq)

    def unknown(self, cq: ClusterQueue) -> str | None:
        """Why ``cq`` names a plugin nobody registered, or ``None``: such a queue is inactive,
        so the cycle only ever sees queues whose plugins exist."""
        if (
            cq.queueing_strategy in self.strategies
            and cq.flavor_assigner in self.assigners
            and cq.preemption_policy in self.preemptors
            and cq.hot_swap_policy in self.hot_swaps
        ):
            return None  # asked of every head: answered without building the table below
        for kind, name, registered in (
            ("queueing strategy", cq.queueing_strategy, self.strategies),
            ("flavor assigner", cq.flavor_assigner, self.assigners),
            ("preemption policy", cq.preemption_policy, self.preemptors),
            ("hot-swap policy", cq.hot_swap_policy, self.hot_swaps),
        ):
            if name not in registered:
                known = ", ".join(sorted(registered)) or "none"
                return f"unknown {kind} {name!r} (registered: {known})"
        return None

    def assigner_for(self, cq: ClusterQueue) -> FlavorAssigner:
        return self.assigners[cq.flavor_assigner]

    def preemptor_for(self, cq: ClusterQueue) -> Preemptor:
        return self.preemptors[cq.preemption_policy]

    def hot_swap_for(self, cq: ClusterQueue) -> HotSwapPolicy | None:
        return self.hot_swaps.get(cq.hot_swap_policy)


def _named(kind: str) -> Registry[type]:
    return Registry(kind, lambda cls: str(cls.NAME))


def _first_result(hook: HookCaller) -> Callable[[WorkloadInfo, ClusterQueue], Any] | None:
    """A ``firstresult`` hook over ``(workload, cluster_queue)`` as the cycle asks it of every
    head (``kq_workload_admissible``, ``kq_admission_terms``): each implementation in pluggy's
    order (the last registered first), the first answer wins, without pluggy's per-call
    machinery, which cost more than the implementations; ``None`` when none implements it."""
    impls = hook.get_hookimpls()
    if not impls:
        return None
    if any(impl.hookwrapper or impl.wrapper for impl in impls):

        def through_pluggy(workload: WorkloadInfo, cq: ClusterQueue) -> Any:
            return hook(workload=workload, cluster_queue=cq)

        return through_pluggy
    calls = [_called_as_hook(impl.function, impl.argnames) for impl in reversed(impls)]
    if len(calls) == 1:
        return calls[0]

    def first(workload: WorkloadInfo, cq: ClusterQueue) -> Any:
        for call in calls:
            result = call(workload, cq)
            if result is not None:
                return result
        return None

    return first


def _called_as_hook(
    function: Callable[..., Any], argnames: tuple[str, ...]
) -> Callable[[WorkloadInfo, ClusterQueue], Any]:
    """``function`` taking ``(workload, cluster_queue)``, passed on as named in ``argnames``;
    the usual shapes are wrapped once, not re-arranged on every call."""
    if argnames == ("workload", "cluster_queue"):
        return function
    if argnames == ("workload",):
        return lambda workload, cq: function(workload)
    positions = tuple(("workload", "cluster_queue").index(name) for name in argnames)
    return lambda workload, cq: function(*[(workload, cq)[i] for i in positions])


def load_admission_plugins(
    pm: pluggy.PluginManager,
    fair_sharing: tuple[str, ...] | None = None,
    priority_boost: bool = False,
    requeue_period: float = 0.0,
) -> AdmissionPlugins:
    """Collect the registered classes, instantiate each once, and wire the veto hook;
    ``priority_boost``: the ``PriorityBoost`` gate, which the core's inputs follow;
    ``requeue_period``: see ``AdmissionPlugins``."""
    strategies = collect_registrations(
        pm, "kq_register_queueing_strategies", _named("queueing strategy")
    )
    assigners = collect_registrations(pm, "kq_register_flavor_assigners", _named("flavor assigner"))
    preemptors = collect_registrations(
        pm, "kq_register_preemption_policies", _named("preemption policy")
    )
    hot_swaps = collect_registrations(pm, "kq_register_hot_swap_policies", _named("hot-swap"))
    veto: Veto | None = _first_result(pm.hook.kq_workload_admissible)
    terms: Terms | None = _first_result(pm.hook.kq_admission_terms)

    queue_order: OrderFor | None = None
    if pm.hook.kq_queue_order.get_hookimpls():
        order_hook = pm.hook.kq_queue_order

        def queue_order(cq: ClusterQueue) -> QueueOrder | None:
            found: QueueOrder | None = order_hook(cluster_queue=cq)
            return found

    return AdmissionPlugins(
        strategies={name: strategies[name]() for name in strategies},
        assigners={name: assigners[name]() for name in assigners},
        preemptors={name: preemptors[name]() for name in preemptors},
        veto=veto,
        terms=terms,
        hot_swaps={name: hot_swaps[name]() for name in hot_swaps},
        fair_sharing=fair_sharing,
        queue_order=queue_order,
        priority_boost=priority_boost,
        requeue_period=requeue_period,
    )
