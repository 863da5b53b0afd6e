"""The simulated cluster over HTTP: informers feed the pure controllers, their actions are applied.

One serialized loop runs every controller over the informers' current contents and applies the
resulting actions in order through the API server, exactly as ``tests/sandbox/world.py`` does in
memory. The loop wakes on any informer event (bursts are coalesced) or when sandbox time reaches
the next pod end, Job deadline, heartbeat or autoscaler step.

How actions reach the API server, and the view the controllers get, is ``writer``'s business;
which kinds are played, ``kinds``'. The loop's Events are written by their own task
(``event_sink``): the loop never waits for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import structlog

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.informer import Informer
from kq.runtime.store import Change, object_key
from kq.sandbox.cluster import (
    eviction,
    garbage,
    job_controller,
    kubelet,
    node_lifecycle,
    provisioning,
    serving,
)
from kq.sandbox.cluster import rayjob_controller as rayjobs
from kq.sandbox.cluster.actions import Action, Create, Delete, Obj, Ref, by_object, meta
from kq.sandbox.cluster.clock import SandboxClock
from kq.sandbox.cluster.jobset_controller import reconcile_jobset
from kq.sandbox.cluster.kinds import (
    CONFIGMAPS,
    JOBSETS,
    MPIJOBS,
    NODES,
    POD_TEMPLATES,
    RAYCLUSTERS,
    RAYJOBS,
    discover,
    served,
)
from kq.sandbox.cluster.mpijob_controller import reconcile_mpijob
from kq.sandbox.cluster.node_lifecycle import Failure, fail_node, pool_nodes, recover_node
from kq.sandbox.cluster.nodes import POOL_LABEL, node_objects
from kq.sandbox.cluster.profiles import Profile
from kq.sandbox.cluster.raycluster_controller import reconcile_raycluster
from kq.sandbox.cluster.scheduling import schedule
from kq.sandbox.cluster.writer import Writer

# What callers of the simulated cluster name from here.
__all__ = [
    "CONFIGMAPS",
    "JOBSETS",
    "MPIJOBS",
    "NODES",
    "POD_TEMPLATES",
    "RAYCLUSTERS",
    "RAYJOBS",
    "Settings",
    "run_simulated_cluster",
    "set_failure",
]

log = structlog.get_logger("kq.sandbox.cluster.driver")


@dataclass(frozen=True, slots=True)
class Settings:
    """Loop timing in wall seconds, and whether to stand in for the garbage collector.

    ``collect_garbage`` is for a bare kube-apiserver (see :mod:`garbage`); the embedded server
    collects garbage itself. It also watches Workloads, which Kueue leaves to the collector.
    """

    coalesce: float = 0.002
    retry: float = 0.5
    collect_garbage: bool = False
    binding: bool | None = None
    """Bind through ``pods/binding`` (``None``: when the server serves it), else patch the pod."""


class _Driver:
    def __init__(
        self, profile: Profile, clock: SandboxClock, settings: Settings, writer: Writer
    ) -> None:
        self.profile = profile
        self.clock = clock
        self.settings = settings
        self.run_seconds = profile.default_run_seconds
        self.writer = writer
        self.informers = writer.informers
        self.view = writer.view
        self.apply_group = writer.apply_group
        self.wake = asyncio.Event()
        for kind, informer in self.informers.items():
            informer.add_handler(self._handler(kind))

    def _handler(self, kind: str) -> Callable[[Change], None]:
        def handle(change: Change) -> None:
            self.writer.overlay.delivered(kind, change)
            self.wake.set()

        return handle

    # -- the loop ------------------------------------------------------------------------------

    async def ensure_nodes(self) -> None:
        """Register the profile's nodes that do not exist yet (state persists across restarts)."""
        have = {object_key(n) for n in self.view("Node")}
        for node in node_objects(self.profile, self.clock.now()):
            if node["metadata"]["name"] not in have:
                await self.apply_group([Create(node)])

    async def reconcile(self) -> None:
        """Every controller once, each seeing the writes of the ones before it."""
        writer = self.writer
        writer.changed = writer.failed = False
        now = self.clock.now
        writer.api_time.retain(writer.overlay.uids())
        await self._run(node_lifecycle.reconcile_nodes(self.view("Node"), now()), per_object=True)
        await self._run(
            eviction.reconcile_evictions(self.view("Pod"), self.view("Node"), now()),
            per_object=True,
        )
        if "ProvisioningRequest" in self.informers:
            await self._run(provisioning.reconcile_provisioning(
                self.view("ProvisioningRequest"), self.view("PodTemplate"), self.view("Node"),
                self.view("Pod"), self.profile, now(),
            ))  # fmt: skip
        await self._run(schedule(self.view("Pod"), self.view("Node"), now()), per_object=True)
        for actions in serving.before_kubelet(self.view):
            await self._run(actions)
        await self._run(
            kubelet.reconcile_pods(self.view("Pod"), self.view("Node"), now(), self.run_seconds),
            per_object=True,
        )
        # Each Job (JobSet) only reads its own pods (Jobs): one view serves them all.
        pods = self.view("Pod")
        for job in self.view("Job"):
            await self._run(job_controller.reconcile_job(job, pods, now()))
        await self._run(job_controller.release_orphans(self.view("Pod"), self.view("Job")))
        jobs = self.view("Job")
        for jobset in self.view("JobSet"):
            await self._run(reconcile_jobset(jobset, jobs, now()))
        clusters = self.view("RayCluster")
        for rayjob in self.view("RayJob"):
            await self._run(rayjobs.reconcile_rayjob(rayjob, clusters, jobs, now()))
        pods = self.view("Pod")
        for cluster in self.view("RayCluster"):
            await self._run(reconcile_raycluster(cluster, pods, now()))
        configs = self.view("ConfigMap")
        for mpijob in self.view("MPIJob"):
            await self._run(reconcile_mpijob(mpijob, self.view("Job"), pods, configs, now()))
        for actions in serving.passes(self.view, now()):
            await self._run(actions)
        if self.settings.collect_garbage:
            await self._collect_garbage()

    async def _collect_garbage(self) -> None:
        owned = [o for kind in garbage.KINDS for o in self.view(kind)]
        for orphan in garbage.orphans(owned):
            try:
                gone = await garbage.owners_gone(self.writer.client, self.writer.resources, orphan)
            except ApiError as exc:
                self.writer.failed = True  # judged again on a later pass
                log.warning("owner lookup failed", object=Ref.of(orphan).name, error=str(exc))
                continue
            if gone:
                await self.apply_group([Delete(Ref.of(orphan))])
        await self._run(garbage.finish_foreground(owned), per_object=True)

    async def _run(self, actions: list[Action], *, per_object: bool = False) -> None:
        groups = by_object(actions) if per_object else [actions]
        for group in groups:
            await self.apply_group(group)

    def next_wakeup(self, since: datetime) -> datetime | None:
        """The earliest time-driven change after ``since`` (the start of the last pass)."""
        moments = [
            kubelet.next_wakeup(self.view("Pod"), self.run_seconds),
            node_lifecycle.next_heartbeat(self.view("Node")),
            eviction.next_eviction(self.view("Pod"), self.view("Node")),
            *(job_controller.deadline(job) for job in self.view("Job")),
            *(rayjobs.shutdown_at(rayjob) for rayjob in self.view("RayJob")),
            serving.next_wakeup(self.view),
        ]
        if "ProvisioningRequest" in self.informers:
            moments.append(provisioning.next_wakeup(self.view("ProvisioningRequest"), since))
        return min((m for m in moments if m is not None and m > since), default=None)

    async def loop(self) -> None:
        while True:
            self.wake.clear()
            started = self.clock.now()
            try:
                await self.reconcile()
            except Exception:
                # A controller tripping over one odd object must not end the simulation.
                log.exception("simulated cluster pass failed")
                self.writer.failed = True
            if self.writer.changed:
                await asyncio.sleep(self.settings.coalesce)
                continue
            delay = self._delay(started)
            try:
                async with asyncio.timeout(delay):
                    await self.wake.wait()
                await asyncio.sleep(self.settings.coalesce)  # let the rest of a burst arrive
            except TimeoutError:
                pass

    def _delay(self, started: datetime) -> float | None:
        wake = self.next_wakeup(started)
        delays = [self.settings.retry] if self.writer.failed else []
        if wake is not None:
            sandbox = (wake - self.clock.now()).total_seconds()
            delays.append(max(self.clock.wall_seconds(sandbox), 0.0))
        return min(delays, default=None)


async def run_simulated_cluster(
    client: KubeClient,
    profile: Profile,
    clock: SandboxClock,
    *,
    ready: asyncio.Event | None = None,
    settings: Settings = Settings(),
) -> None:
    """Simulate ``profile``'s cluster behind the API server ``client`` talks to, until cancelled.

    Registers the profile's missing Nodes, watches Nodes, Pods, Jobs, Deployments, ReplicaSets,
    StatefulSets and, when served, JobSets, RayJobs, RayClusters, MPIJobs (with ConfigMaps),
    LeaderWorkerSets and ProvisioningRequests (with PodTemplates), and plays scheduler, kubelet,
    node lifecycle, taint manager, Job, JobSet, RayJob, RayCluster, MPIJob, Deployment,
    ReplicaSet, StatefulSet, LeaderWorkerSet and autoscaler controllers on ``clock``'s time, and
    the garbage collector
    if ``settings`` ask for it. ``ready`` is set once the
    caches are synced and the nodes exist. API errors never end it: failed actions are retried on a
    later pass. Node failures are injected with :func:`set_failure`.
    """
    resources = await discover(client, workloads=settings.collect_garbage)
    binding = settings.binding
    if binding is None:
        binding = await served(client, "v1", "pods/binding")
    informers = {kind: Informer(client, resource) for kind, resource in resources.items()}
    writer = Writer(client, clock, resources, informers, binding=binding)
    driver = _Driver(profile, clock, settings, writer)
    async with asyncio.TaskGroup() as group:
        for kind, informer in informers.items():
            group.create_task(informer.run(), name=f"sandbox-informer/{kind}")
        for informer in driver.informers.values():
            await informer.wait_synced()
        await driver.ensure_nodes()
        if ready is not None:
            ready.set()
        log.info("simulated cluster running", profile=profile.name, speed=clock.speed,
                 kinds=sorted(informers), binding=binding)  # fmt: skip
        group.create_task(driver.loop(), name="sandbox-loop")
        group.create_task(writer.events.run(), name="sandbox-events")


async def set_failure(
    client: KubeClient,
    *,
    node: str | None = None,
    pool: str | None = None,
    failed: bool = True,
    mode: Failure = "Unreachable",
) -> list[str]:
    """Fail (or recover) one node or every node of a pool; returns the nodes patched."""
    if (node is None) == (pool is None):
        raise ValueError("name exactly one of node or pool")
    if node is not None:
        targets = [await client.get(NODES, node)]
    else:
        listing = await client.list(NODES, query=[("labelSelector", f"{POOL_LABEL}={pool}")])
        items: list[Obj] = [{"kind": "Node", "apiVersion": "v1", **n} for n in listing["items"]]
        targets = pool_nodes(items, str(pool))
    for target in targets:
        patch = fail_node(target, mode) if failed else recover_node(target)
        await client.merge_patch(NODES, patch.ref.name, patch.patch)
    return [str(meta(t)["name"]) for t in targets]
