"""The job controllers: informers feed ``decide`` and ``ActionApplier`` writes its actions.

Standalone entry point (runs its own informers; writes only while ``is_leader()``)::

    async def run_job_integrations(
        client: KubeClient,
        pm: pluggy.PluginManager,
        *,
        config: KqConfig,
        is_leader: Callable[[], bool],
        workers: int = 4,
    ) -> None

For ``kq run``'s ``kq.runtime.manager.Manager``, before the process starts its informers::

    await register_job_integrations(manager, pm, config)

which shares the manager's informers and adds the workers as the leader-only runnable
``job-controllers``; ``kq.app`` serves the job webhooks from its ``integrations`` and ``facts``.

Every registered integration named in ``integrations.frameworks`` whose kind the API server
serves gets an informer; a kind that is not served (no CRD) is skipped with a log line.
Workloads, ResourceFlavors, WorkloadPriorityClasses, PriorityClasses, Namespaces and
LocalQueues are watched once for all kinds. One work queue holds job keys
``<framework>/<namespace>/<name>``, added on changes of the job and of the Workloads it
controls, of its namespace's labels (``managedJobsNamespaceSelector``) and of the
WorkloadPriorityClass it names. Every job is reconciled again when leadership is gained.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

import pluggy

from kq.config import ConfigError, KqConfig
from kq.jobframework.constants import KUEUE_FRAMEWORKS
from kq.jobframework.interface import GenericJob
from kq.jobframework.io_facts import Caches, FactSource, JobFrameworkOptions
from kq.jobframework.io_reconciler import CONTROLLER, Enqueuer, JobKind, JobReconciler, log
from kq.jobframework.io_resources import discover
from kq.jobframework.registry import job_integrations
from kq.runtime.client import KubeClient
from kq.runtime.events import EventRecorder
from kq.runtime.informer import Informer
from kq.runtime.manager import Manager
from kq.runtime.reconciler import Controller
from kq.runtime.resources import (
    LOCAL_QUEUES,
    NAMESPACES,
    PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    Resource,
)

InformerFactory = Callable[[Resource], Informer]


class JobControllers:
    """The informers, the work queue and the workers of every served job kind."""

    def __init__(
        self,
        client: KubeClient,
        kinds: Mapping[str, JobKind],
        options: JobFrameworkOptions,
        is_leader: Callable[[], bool],
        workers: int,
        informer_for: InformerFactory,
    ) -> None:
        self._kinds = kinds
        self._options = options
        self._is_leader = is_leader
        self._informers = {
            resource.kind: informer_for(resource)
            for resource in (
                WORKLOADS,
                RESOURCE_FLAVORS,
                WORKLOAD_PRIORITY_CLASSES,
                PRIORITY_CLASSES,
                NAMESPACES,
                LOCAL_QUEUES,
            )
        }
        stores = {kind: informer.store for kind, informer in self._informers.items()}
        caches = Caches(
            workloads=stores["Workload"],
            flavors=stores["ResourceFlavor"],
            workload_priority_classes=stores["WorkloadPriorityClass"],
            priority_classes=stores["PriorityClass"],
            namespaces=stores["Namespace"],
            local_queues=stores["LocalQueue"],
        )
        by_gvk = {
            (k.integration.GVK.api_version, k.integration.GVK.kind): (
                k.integration,
                k.informer.store,
            )
            for k in kinds.values()
        }
        self.facts = FactSource(caches, options, by_gvk)
        recorder = EventRecorder(client, component="kq", namespace=options.events_namespace)
        reconciler = JobReconciler(client, kinds, caches, self.facts, recorder, is_leader)
        # The controller's own queue: Controller(queue=...) swaps in a new one when the given
        # queue is empty, as an empty WorkQueue is falsy.
        self._controller = Controller(CONTROLLER, reconciler, workers=workers)
        self._enqueue = Enqueuer(self._controller.queue, kinds, caches)
        for kind in kinds.values():
            kind.informer.add_handler(self._enqueue.job(kind))
        self._informers["Workload"].add_handler(self._enqueue.workload)
        self._informers["ResourceFlavor"].add_handler(self._enqueue.flavor)
        self._informers["Namespace"].add_handler(self._enqueue.namespace)
        self._informers["WorkloadPriorityClass"].add_handler(self._enqueue.workload_priority_class)

    @classmethod
    async def create(
        cls,
        client: KubeClient,
        pm: pluggy.PluginManager,
        *,
        config: KqConfig,
        is_leader: Callable[[], bool],
        workers: int | None = None,
        informer_for: InformerFactory | None = None,
    ) -> JobControllers:
        """Discover which job kinds are served; nothing runs until ``run``.

        ``informer_for`` hands out (shared) informers; by default each is new and ``run``
        runs it. ``workers``: by default, the largest ``controller.groupKindConcurrency`` of
        the served kinds (they share one work queue), else 4.
        """
        options = JobFrameworkOptions.from_config(config)
        factory = informer_for or (lambda resource: Informer(client, resource))
        kinds = await _served_kinds(client, job_integrations(pm), options, factory)
        if workers is None:
            named = [config.workers(k.integration.GVK.group_kind, 0) for k in kinds.values()]
            workers = max(named, default=0) or 4
        return cls(client, kinds, options, is_leader, workers, factory)

    @property
    def frameworks(self) -> list[str]:
        return sorted(self._kinds)

    @property
    def integrations(self) -> dict[str, GenericJob]:
        """The running kinds' integrations, by framework: what the job webhooks serve."""
        return {k.framework: k.integration for k in self._kinds.values()}

    async def synced(self) -> None:
        await asyncio.gather(*(informer.wait_synced() for informer in self._every_informer()))

    async def run(self) -> None:
        """Run the informers and the workers until cancelled."""
        async with asyncio.TaskGroup() as group:
            for informer in self._every_informer():
                group.create_task(informer.run())
            group.create_task(self.run_workers())

    async def run_workers(self) -> None:
        """Reconcile once every cache is filled, until cancelled; informers run elsewhere."""
        # Deciding before the Workload cache is full would create duplicates.
        await self.synced()
        log.info(
            "starting job controllers",
            frameworks=self.frameworks,
            workers=self._controller.workers,
        )
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._controller.run())
                group.create_task(self._watch_leadership())
        finally:
            self._controller.queue.shut_down()

    def _every_informer(self) -> list[Informer]:
        return [*self._informers.values(), *(k.informer for k in self._kinds.values())]

    async def _watch_leadership(self) -> None:
        """Reconcile every job on becoming leader: nothing was written while following."""
        leading = False
        while True:
            now_leading = self._is_leader()
            if now_leading and not leading:
                self._enqueue.everything()
            leading = now_leading
            await asyncio.sleep(self._options.leader_poll_interval)


async def _served_kinds(
    client: KubeClient,
    integrations: Mapping[str, GenericJob],
    options: JobFrameworkOptions,
    informer_for: InformerFactory,
) -> dict[str, JobKind]:
    _check_frameworks(options.frameworks, integrations)
    enabled = set(options.frameworks)
    # Upstream's ImplicitlyEnabledFrameworkNames: a serving kind needs the pod integration.
    for framework in options.frameworks:
        enabled.update(getattr(integrations.get(framework), "IMPLICITLY_ENABLES", ()))
    kinds = {}
    for framework, integration in integrations.items():
        if framework not in enabled:
            log.info("job integration not enabled", framework=framework)
            continue
        resource = await discover(client, integration.GVK)
        if resource is None:
            log.info(
                "job kind not served by the API server, skipping",
                framework=framework,
                api_version=integration.GVK.api_version,
                kind=integration.GVK.kind,
            )
            continue
        kinds[framework] = JobKind(framework, integration, resource, informer_for(resource))
    return kinds


def _check_frameworks(wanted: Sequence[str], integrations: Mapping[str, GenericJob]) -> None:
    """Nothing named in ``integrations.frameworks`` is ignored without a word."""
    missing = [f for f in wanted if f not in integrations]
    unknown = [f for f in missing if f not in KUEUE_FRAMEWORKS]
    if unknown:
        raise ConfigError(
            f"integrations.frameworks: unknown framework(s) {', '.join(unknown)} "
            f"(kq integrates: {', '.join(sorted(integrations))})"
        )
    for framework in missing:
        log.warning(
            "kq has no integration for this Kueue framework: its jobs are not queued",
            framework=framework,
        )


async def run_job_integrations(
    client: KubeClient,
    pm: pluggy.PluginManager,
    *,
    config: KqConfig,
    is_leader: Callable[[], bool],
    workers: int | None = None,
) -> None:
    """Run the job controllers until cancelled (see the module docstring)."""
    controllers = await JobControllers.create(
        client, pm, config=config, is_leader=is_leader, workers=workers
    )
    await controllers.run()


async def register_job_integrations(
    manager: Manager, pm: pluggy.PluginManager, config: KqConfig, *, workers: int | None = None
) -> JobControllers:
    """Attach the job controllers to ``kq run``'s manager; ``kq.app`` serves their webhooks
    (``integrations``, ``facts``).

    The runnable is leader-only: a replica that loses the lease stops its runnables (and
    exits); until then its writes, retries included, wait on the manager's ``is_leading``.
    """
    controllers = await JobControllers.create(
        manager.leader_client,
        pm,
        config=config,
        is_leader=manager.is_leading,
        workers=workers,
        informer_for=manager.informer,
    )
    manager.add("job-controllers", controllers.run_workers, leader_only=True)
    return controllers
