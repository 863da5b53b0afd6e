"""The admission plugins a cycle uses, collected once from the ``kq_register_*`` hooks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pluggy

from kq.api.clusterqueue import ClusterQueue
from kq.plugins import Registry, collect_registrations
from kq.queue.strategy import QueueingStrategy
from kq.scheduler.protocols import FlavorAssigner, Preemptor
from kq.workload.info import WorkloadInfo

Veto = Callable[[WorkloadInfo, ClusterQueue], str | None]
DEFAULT_PREEMPTOR = "ClassicPreemption"


@dataclass(frozen=True)
class AdmissionPlugins:
    """Instances resolved by name; the hot loop calls them directly, never through pluggy."""

    strategies: Mapping[str, QueueingStrategy]
    assigners: Mapping[str, FlavorAssigner]
    preemptor: Preemptor
    veto: Veto | None = None

    def assigner_for(self, cq: ClusterQueue) -> FlavorAssigner | str:
        """The queue's assigner, or the message saying its annotation names none."""
        assigner = self.assigners.get(cq.flavor_assigner)
        if assigner is None:
            known = ", ".join(sorted(self.assigners))
            return f"unknown flavor assigner {cq.flavor_assigner} (registered: {known})"
        return assigner


def _named(kind: str) -> Registry[type]:
    return Registry(kind, lambda cls: str(cls.NAME))


def load_admission_plugins(
    pm: pluggy.PluginManager, preemptor: str = DEFAULT_PREEMPTOR
) -> AdmissionPlugins:
    """Collect the registered classes, instantiate each once, and wire the veto hook."""
    strategies = collect_registrations(
        pm, "kq_register_queueing_strategies", _named("queueing strategy")
    )
    assigners = collect_registrations(pm, "kq_register_flavor_assigners", _named("flavor assigner"))
    preemptors = collect_registrations(
        pm, "kq_register_preemption_policies", _named("preemption policy")
    )
    veto: Veto | None = None
    if pm.hook.kq_workload_admissible.get_hookimpls():
        hook = pm.hook.kq_workload_admissible

        def veto(workload: WorkloadInfo, cq: ClusterQueue) -> str | None:
            result: str | None = hook(workload=workload, cluster_queue=cq)
            return result

    return AdmissionPlugins(
        strategies={name: strategies[name]() for name in strategies},
        assigners={name: assigners[name]() for name in assigners},
        preemptor=preemptors[preemptor](),
        veto=veto,
    )
