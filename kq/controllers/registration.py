"""Plugging the admission controller into the ``kq run`` process's Manager."""

from __future__ import annotations

import pluggy

from kq.config import KqConfig
from kq.controllers.admission import WATCHED, AdmissionController
from kq.controllers.visible import VisibleQueues
from kq.runtime.manager import Manager
from kq.scheduler.observers import load_observers
from kq.scheduler.plugins import load_admission_plugins


def register_admission(
    manager: Manager, config: KqConfig, pm: pluggy.PluginManager
) -> VisibleQueues:
    """Share the manager's informers and add the controller as a leader-only runnable.

    It starts when this replica is elected and is cancelled when leadership is lost; until
    then (a paused process notices late) its writes, retries included, are gated on the
    manager's ``is_leading``. Its handlers replay the informers' stores when it starts.
    ``pm`` is the process's plugin manager, already configured (``kq_configure``).
    Returns the queues the visibility API reads: the controller's once it runs.
    """
    informers = {resource: manager.informer(resource) for resource in WATCHED}
    plugins = load_admission_plugins(
        pm,
        config.fair_sharing.strategies_if_enabled(),
        config.feature_gates.get("PriorityBoost", False),
        config.requeue_period,
    )
    observers = load_observers(pm)
    pods_ready = config.wait_for_pods_ready
    by_eviction = not pods_ready.enable or pods_ready.requeuing_strategy.timestamp == "Eviction"
    visible = VisibleQueues(informers, plugins, by_eviction)

    async def start() -> None:
        controller = AdmissionController(
            manager.leader_client,
            is_leader=manager.is_leading,
            plugins=plugins,
            informers=informers,
            event_namespace=config.namespace,
            pods_ready=pods_ready if pods_ready.enable else None,
            observers=observers,
        )
        visible.lead(controller.feed)
        await controller.run()

    manager.add("admission", start, leader_only=True)
    return visible
