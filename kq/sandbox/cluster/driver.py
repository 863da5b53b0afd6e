"""The simulated cluster over HTTP: informers feed the pure controllers, their actions are applied.

One serialized loop runs every controller over the informers' current contents and applies the
resulting actions in order through the API server, exactly as ``tests/sandbox/world.py`` does in
memory. The loop wakes on any informer event (bursts are coalesced) or when sandbox time reaches
the next pod end, Job deadline, heartbeat or autoscaler step.

The loop's own writes are laid over the informers' caches until they deliver them (``overlay``).
Timestamps cross the API as wall time and reach the controllers as sandbox time (``apitime``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import structlog

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.events import EventRecorder
from kq.runtime.informer import Informer
from kq.runtime.resources import JOBS, PODS, WORKLOADS, Resource
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
from kq.sandbox.cluster.actions import (
    Action,
    Create,
    Delete,
    Event,
    Obj,
    Patch,
    Ref,
    by_object,
    describe,
    meta,
)
from kq.sandbox.cluster.apitime import ApiTime
from kq.sandbox.cluster.clock import SandboxClock
from kq.sandbox.cluster.jobset_controller import reconcile_jobset
from kq.sandbox.cluster.mpijob_controller import reconcile_mpijob
from kq.sandbox.cluster.node_lifecycle import Failure, fail_node, pool_nodes, recover_node
from kq.sandbox.cluster.nodes import POOL_LABEL, node_objects
from kq.sandbox.cluster.overlay import Overlay
from kq.sandbox.cluster.profiles import Profile
from kq.sandbox.cluster.raycluster_controller import reconcile_raycluster
from kq.sandbox.cluster.scheduling import schedule

log = structlog.get_logger("kq.sandbox.cluster.driver")

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
POD_TEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate", namespaced=True)
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", namespaced=True)
RAYJOBS = Resource("ray.io", "v1", "rayjobs", "RayJob", namespaced=True)
RAYCLUSTERS = Resource("ray.io", "v1", "rayclusters", "RayCluster", namespaced=True)
MPIJOBS = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", namespaced=True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
_OPTIONAL = (JOBSETS, RAYJOBS, RAYCLUSTERS, MPIJOBS, serving.LEADERWORKERSETS)
"""Kinds simulated when the server serves them (a bare kube-apiserver may lack the CRDs)."""
_PROVISIONING_GROUP = "autoscaling.x-k8s.io"


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
        self, client: KubeClient, profile: Profile, clock: SandboxClock, settings: Settings
    ) -> None:
        self.client = client
        self.profile = profile
        self.clock = clock
        self.settings = settings
        self.run_seconds = profile.default_run_seconds
        self.resources: dict[str, Resource] = {"Node": NODES, "Pod": PODS, "Job": JOBS,
                                               **serving.BUILTIN}  # fmt: skip
        self.informers: dict[str, Informer] = {}
        self.overlay = Overlay(self.informers)
        self.api_time = ApiTime(clock)
        self.wake = asyncio.Event()
        self.recorders: dict[str, EventRecorder] = {}
        self.binding: bool | None = None
        self.changed = False  # this pass wrote something the server did not already have
        self.failed = False  # some action failed: look again after ``settings.retry``

    # -- discovery and informers -------------------------------------------------------------

    async def _served(self, group_version: str, plural: str) -> bool:
        path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
        try:
            listing = await self.client.request("GET", path)
        except ApiError as exc:
            if exc.not_found:
                return False
            raise
        return any(r.get("name") == plural for r in listing.get("resources") or ())

    async def discover(self) -> None:
        """Which optional kinds the server serves, and whether it has ``pods/binding``."""
        self.binding = self.settings.binding
        if self.binding is None:
            self.binding = await self._served("v1", "pods/binding")
        for resource in _OPTIONAL:
            if await self._served(resource.api_version, resource.plural):
                self.resources[resource.kind] = resource
        if "MPIJob" in self.resources:
            self.resources["ConfigMap"] = CONFIGMAPS  # the hostfile
        for version in ("v1", "v1beta1"):
            if await self._served(f"{_PROVISIONING_GROUP}/{version}", "provisioningrequests"):
                self.resources["ProvisioningRequest"] = Resource(
                    _PROVISIONING_GROUP, version, "provisioningrequests", "ProvisioningRequest",
                    namespaced=True,
                )  # fmt: skip
                self.resources["PodTemplate"] = POD_TEMPLATES
                break
        if self.settings.collect_garbage:
            self.resources["Workload"] = WORKLOADS
        for kind, resource in self.resources.items():
            informer = Informer(self.client, resource)
            informer.add_handler(self._handler(kind))
            self.informers[kind] = informer

    def _handler(self, kind: str) -> Callable[[Change], None]:
        def handle(change: Change) -> None:
            self.overlay.delivered(kind, change)
            self.wake.set()

        return handle

    # -- the view ------------------------------------------------------------------------------

    def view(self, kind: str) -> list[Obj]:
        """The informer's objects with the loop's own newer writes laid over them, by key."""
        if kind not in self.informers:
            return []
        objects = self.overlay.objects(kind)
        return [self.api_time.incoming(objects[k]) for k in sorted(objects)]

    def _written(self, kind: str, before: Obj | None, after: Obj) -> None:
        """Record a write's result; ``changed`` when the server's version moved."""
        after.setdefault("kind", kind)
        after.setdefault("apiVersion", self.resources[kind].api_version)
        version = str(meta(after).get("resourceVersion", ""))
        if before is None or str(meta(before).get("resourceVersion", "")) != version:
            self.changed = True
        # Removing the last finalizer of a deleting object deletes it: the answer is its last state.
        self.overlay.remember(kind, None if _gone(after) else after, Ref.of(after), version)

    # -- applying actions ----------------------------------------------------------------------

    async def apply_group(self, actions: Sequence[Action]) -> None:
        """Apply in order; after a failure the rest depends on a state that was not reached."""
        for action in actions:
            try:
                await self._apply(action)
            except ApiError as exc:
                self.failed = True
                quiet = exc.not_found or exc.conflict
                (log.debug if quiet else log.warning)("action failed", action=describe(action),
                                                      error=str(exc))  # fmt: skip
                return

    async def _apply(self, action: Action) -> None:
        if isinstance(action, Event):
            await self._event(action)
        elif isinstance(action, Create):
            if action.obj["kind"] == "Binding":
                await self._bind(action.obj)
            else:
                await self._create(action.obj)
        elif isinstance(action, Patch):
            resource = self.resources[action.ref.kind]
            before = self.overlay.current(action.ref.kind, action.ref)
            body, stamps = self.api_time.outgoing(action.patch)
            after = await self.client.merge_patch(
                resource, action.ref.name, body,
                namespace=action.ref.namespace or None, subresource=action.subresource,
            )  # fmt: skip
            self.api_time.record(str(meta(after).get("uid", "")), stamps)
            self._written(action.ref.kind, before, after)
        else:
            await self._delete(action)

    async def _create(self, obj: Obj) -> None:
        kind = str(obj["kind"])
        resource = self.resources[kind]
        body, stamps = self.api_time.outgoing(obj)
        created = await self.client.create(resource, body)
        status = body.get("status")
        if status and created.get("status") != status:
            # Servers that drop status on create (a registering kubelet) take it as a second write.
            created = await self.client.merge_patch(
                resource, meta(created)["name"], {"status": status},
                namespace=meta(created).get("namespace"), subresource="status",
            )  # fmt: skip
        self.api_time.record(str(meta(created).get("uid", "")), stamps)
        self._written(kind, None, created)

    async def _bind(self, binding: Obj) -> None:
        m = binding["metadata"]
        ns, name, node = str(m["namespace"]), str(m["name"]), str(binding["target"]["name"])
        if self.binding:
            await self.client.request("POST", f"{PODS.path(ns, name)}/binding", body=binding)
            pod = await self.client.get(PODS, name, ns)
        else:
            # No binding subresource: set the node and the condition the way binding would.
            await self.client.merge_patch(PODS, name, {"spec": {"nodeName": node}}, namespace=ns)
            current = await self.client.get(PODS, name, ns)
            conditions = [
                c for c in (current.get("status") or {}).get("conditions") or ()
                if c.get("type") != "PodScheduled"
            ]  # fmt: skip
            stamp = self.api_time.stamp(self.clock.now())
            conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                               "lastTransitionTime": stamp})  # fmt: skip
            pod = await self.client.merge_patch(
                PODS, name, {"status": {"conditions": conditions}}, namespace=ns,
                subresource="status",
            )  # fmt: skip
        self._written("Pod", None, pod)

    async def _delete(self, action: Delete) -> None:
        ref = action.ref
        resource = self.resources[ref.kind]
        query: list[tuple[str, str]] = [("propagationPolicy", action.propagation)]
        if action.grace_period_seconds is not None:
            query.append(("gracePeriodSeconds", str(action.grace_period_seconds)))
        before = self.overlay.current(ref.kind, ref)
        try:
            result = await self.client.request(
                "DELETE", resource.path(ref.namespace or None, ref.name), query=query
            )
        except ApiError as exc:
            if exc.not_found:  # already gone: the goal of the action is met
                self.overlay.remember(ref.kind, None, ref, "")
                return
            raise
        lingers = result.get("kind") == ref.kind and meta(result).get("deletionTimestamp")
        if lingers and not _gone(result):
            self._written(ref.kind, before, result)
        else:  # a Status or its last state: the object is gone
            self.changed = True
            self.overlay.remember(ref.kind, None, ref, "")

    async def _event(self, event: Event) -> None:
        source = event.source or "kq-sandbox"
        recorder = self.recorders.get(source)
        if recorder is None:
            recorder = self.recorders[source] = EventRecorder(self.client, source)
        ref = event.regarding
        regarding = {
            "apiVersion": ref.api_version,
            "kind": ref.kind,
            "metadata": {"name": ref.name, "namespace": ref.namespace, "uid": ref.uid},
        }
        await recorder.record(regarding, event.type, event.reason, event.message)

    # -- the loop ------------------------------------------------------------------------------

    async def ensure_nodes(self) -> None:
        """Register the profile's nodes that do not exist yet (state persists across restarts)."""
        have = {object_key(n) for n in self.view("Node")}
        for node in node_objects(self.profile, self.clock.now()):
            if node["metadata"]["name"] not in have:
                await self.apply_group([Create(node)])

    async def reconcile(self) -> None:
        """Every controller once, each seeing the writes of the ones before it."""
        self.changed = self.failed = False
        now = self.clock.now
        self.api_time.retain(self.overlay.uids())
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
                gone = await garbage.owners_gone(self.client, self.resources, orphan)
            except ApiError as exc:
                self.failed = True  # judged again on a later pass
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
                self.failed = True
            if self.changed:
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
        delays = [self.settings.retry] if self.failed else []
        if wake is not None:
            sandbox = (wake - self.clock.now()).total_seconds()
            delays.append(max(self.clock.wall_seconds(sandbox), 0.0))
        return min(delays, default=None)


def _gone(obj: Obj) -> bool:
    """Whether a write's answer describes an object the server has already removed."""
    m = meta(obj)
    return bool(
        m.get("deletionTimestamp")
        and not m.get("finalizers")
        and not m.get("deletionGracePeriodSeconds")
    )


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
    driver = _Driver(client, profile, clock, settings)
    await driver.discover()
    async with asyncio.TaskGroup() as group:
        for kind, informer in driver.informers.items():
            group.create_task(informer.run(), name=f"sandbox-informer/{kind}")
        for informer in driver.informers.values():
            await informer.wait_synced()
        await driver.ensure_nodes()
        if ready is not None:
            ready.set()
        log.info("simulated cluster running", profile=profile.name, speed=clock.speed,
                 kinds=sorted(driver.informers), binding=driver.binding)  # fmt: skip
        group.create_task(driver.loop(), name="sandbox-loop")


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
