"""kq's generic part of every admission-check controller plugin.

It keeps the ``Active`` condition of the AdmissionChecks a plugin owns, and calls the plugin's
``sync`` for the Workloads that list those checks, writing the states it returns into
``status.admissionChecks``. Checks of a ``controllerName`` no plugin owns are left alone: a
controller running elsewhere manages them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pluggy
import structlog

from kq.admissionchecks.interface import Activity, AdmissionCheckController, CheckUpdate, Obj
from kq.admissionchecks.registry import check_controllers
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.events import NORMAL, WARNING, EventRecorder
from kq.runtime.informer import Informer
from kq.runtime.manager import Manager
from kq.runtime.reconciler import Controller, Result
from kq.runtime.resources import ADMISSION_CHECKS, WORKLOADS, Resource
from kq.runtime.store import Change, EventType, Store, object_key
from kq.workload import checks as states
from kq.workload.status import condition

log = structlog.get_logger("kq.admissionchecks")

NAME = "admission-checks"
InformerFactory = Callable[[Resource], Informer]


class _Context:
    """The ``CheckContext`` handed to every plugin."""

    def __init__(self, runner: CheckRunner) -> None:
        self._runner = runner

    @property
    def client(self) -> KubeClient:
        return self._runner.client

    def store(self, resource: Resource) -> Store:
        return self._runner.informers[resource].store

    def enqueue(self, workload_key: str, after: float = 0.0) -> None:
        self._runner.controller.queue.add_after(workload_key, after)

    def event(self, obj: Obj, reason: str, message: str, warning: bool = False) -> None:
        self._runner.event(obj, reason, message, warning)


class CheckRunner:
    """Informers, the Active writer and the per-Workload sync of every registered plugin."""

    def __init__(
        self,
        client: KubeClient,
        controllers: Mapping[str, AdmissionCheckController],
        informer_for: InformerFactory,
        recorder: EventRecorder,
        workers: int = 4,
        idle: Mapping[str, Activity] | None = None,
    ) -> None:
        """``idle``: controllers that cannot run here, with the ``Active`` their checks get."""
        self.client = client
        self._controllers = controllers
        self._idle = dict(idle or {})
        self._recorder = recorder
        self._events: set[asyncio.Task[None]] = set()
        kinds = [ADMISSION_CHECKS, WORKLOADS]
        for plugin in controllers.values():
            kinds += [r for r in plugin.WATCHES if r not in kinds]
        self.informers = {r: informer_for(r) for r in kinds}
        self.controller = Controller(NAME, self, workers=workers)
        self.context = _Context(self)
        self._activity_dirty = asyncio.Event()
        self.informers[ADMISSION_CHECKS].add_handler(lambda _: self._activity_dirty.set())
        self.informers[WORKLOADS].add_handler(self._workload)
        for resource in kinds[2:]:
            self.informers[resource].add_handler(self._watched(resource))

    # -- events ----------------------------------------------------------------------------

    def _owner(self, check_name: str) -> str | None:
        check = self.informers[ADMISSION_CHECKS].store.get(check_name)
        if check is None:
            return None
        name = str((check.get("spec") or {}).get("controllerName", ""))
        return name if name in self._controllers else None

    def _ours(self, workload: Obj) -> bool:
        listed = (workload.get("status") or {}).get("admissionChecks") or ()
        return any(self._owner(str(s.get("name"))) is not None for s in listed)

    def _workload(self, change: Change) -> None:
        if change.type is not EventType.DELETED and self._ours(change.obj):
            self.controller.queue.add(object_key(change.obj))

    def _watched(self, resource: Resource) -> Callable[[Change], None]:
        def handler(change: Change) -> None:
            if not resource.namespaced:
                self._activity_dirty.set()
                for workload in self.informers[WORKLOADS].store.values():
                    if self._ours(workload):
                        self.controller.queue.add(object_key(workload))
                return
            namespace = change.obj["metadata"].get("namespace", "")
            for ref in change.obj["metadata"].get("ownerReferences") or ():
                if ref.get("kind") == "Workload":
                    self.controller.queue.add(f"{namespace}/{ref.get('name')}")

        return handler

    def event(self, obj: Obj, reason: str, message: str, warning: bool = False) -> None:
        kind = WARNING if warning else NORMAL
        task = asyncio.create_task(self._recorder.record(obj, kind, reason, message))
        self._events.add(task)
        task.add_done_callback(self._events.discard)

    # -- running ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Until cancelled, once every informer has synced (they run elsewhere)."""
        await asyncio.gather(*(i.wait_synced() for i in self.informers.values()))
        log.info("admission check controllers started", controllers=sorted(self._controllers))
        for workload in self.informers[WORKLOADS].store.values():
            if self._ours(workload):
                self.controller.queue.add(object_key(workload))
        self._activity_dirty.set()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.controller.run())
                group.create_task(self._keep_activity())
        finally:
            self.controller.queue.shut_down()
            for task in self._events:
                task.cancel()

    async def _keep_activity(self) -> None:
        while True:
            await self._activity_dirty.wait()
            self._activity_dirty.clear()
            for check in self.informers[ADMISSION_CHECKS].store.values():
                try:
                    await self._write_activity(check)
                except ApiError as exc:
                    if exc.status not in (404, 409):
                        log.warning("admission check status not written", error=str(exc))
                    self._activity_dirty.set()  # look again with the newer object
            if self._activity_dirty.is_set():
                await asyncio.sleep(0.1)

    async def _write_activity(self, check: Obj) -> None:
        name = str((check.get("spec") or {}).get("controllerName", ""))
        plugin = self._controllers.get(name)
        if plugin is not None:
            activity = plugin.activity(check, self.context)
        elif name in self._idle:
            activity = self._idle[name]
        else:
            return
        current = list((check.get("status") or {}).get("conditions") or ())
        old: Obj = next((c for c in current if c.get("type") == "Active"), {})
        wanted = ("True" if activity.active else "False", activity.reason, activity.message)
        if (old.get("status"), old.get("reason"), old.get("message")) == wanted:
            return
        new = condition("Active", activity.active, activity.reason, activity.message, _now())
        if old.get("status") == new["status"]:
            new["lastTransitionTime"] = old.get("lastTransitionTime", new["lastTransitionTime"])
        conditions = [c for c in current if c.get("type") != "Active"] + [new]
        await self.client.merge_patch(
            ADMISSION_CHECKS,
            check["metadata"]["name"],
            {"status": {"conditions": conditions}},
            resource_version=check["metadata"].get("resourceVersion"),
            subresource="status",
        )

    async def reconcile(self, key: str) -> Result:
        workload = self.informers[WORKLOADS].store.get(key)
        if workload is None:
            return Result()
        current = states.states_of(workload)
        updates: list[CheckUpdate] = []
        for name, owned in self._by_controller(current).items():
            updates += await self._controllers[name].sync(workload, owned, self.context)
        if not _deciding(workload):
            return Result()  # kq reset the states on eviction; they wait for a new reservation
        new = _apply(current, updates)
        if new != current:
            await self._write_states(workload, new)
        return Result()

    def _by_controller(self, current: Iterable[Mapping[str, Any]]) -> dict[str, list[Obj]]:
        grouped: dict[str, list[Obj]] = {}
        store = self.informers[ADMISSION_CHECKS].store
        for state in current:
            name = str(state.get("name"))
            owner = self._owner(name)
            check = store.get(name)
            if owner is not None and check is not None:
                grouped.setdefault(owner, []).append(check)
        return grouped

    async def _write_states(self, workload: Obj, new: list[states.State]) -> None:
        meta = workload["metadata"]
        try:
            await self.client.merge_patch(
                WORKLOADS,
                meta["name"],
                {"status": {"admissionChecks": new}},
                namespace=meta.get("namespace"),
                resource_version=meta.get("resourceVersion"),
                subresource="status",
            )
        except ApiError as exc:
            if exc.status not in (404, 409):
                raise
            # 409: the watch brings the newer Workload, and with it another sync.


def _deciding(workload: Obj) -> bool:
    """Whether states may change: quota is reserved, and no eviction or finish is under way."""
    conditions = {
        c.get("type"): c.get("status") for c in workload["status"].get("conditions") or ()
    }
    return (
        workload["status"].get("admission") is not None
        and conditions.get("QuotaReserved") == "True"
        and conditions.get("Evicted") != "True"
        and conditions.get("Finished") != "True"
    )


def _apply(current: list[states.State], updates: Sequence[CheckUpdate]) -> list[states.State]:
    """The states with each update applied; names the Workload does not list are dropped."""
    out = current
    listed = {s.get("name") for s in current}
    now = _now()
    for update in updates:
        if update.name not in listed:
            continue
        fields: dict[str, Any] = {
            "name": update.name,
            "state": update.state,
            "message": update.message,
            "requeueAfterSeconds": update.requeue_after_seconds,
            "podSetUpdates": [dict(u) for u in update.pod_set_updates] or None,
        }
        out = states.with_update(out, fields, now)
    return out


def _now() -> float:
    return time.time()


async def _not_served(client: KubeClient, resources: Iterable[Resource]) -> list[str]:
    """The kinds among ``resources`` the API server does not serve (no CRD installed)."""
    missing = []
    for resource in resources:
        path = resource.path().rsplit("/", 1)[0]
        try:
            listing = await client.request("GET", path)
        except ApiError as exc:
            if not exc.not_found:
                raise
            listing = {}
        plurals = {str(item.get("name")) for item in listing.get("resources") or ()}
        if resource.plural not in plurals:
            missing.append(f"{resource.plural}.{resource.group or 'core'}/{resource.version}")
    return missing


not_served = _not_served
"""Public for the other plugin runners (``kq.controllers.plugin_controllers``)."""


async def served_controllers(
    client: KubeClient, controllers: Mapping[str, AdmissionCheckController]
) -> tuple[dict[str, AdmissionCheckController], dict[str, Activity]]:
    """Controllers whose kinds are all served, and why each of the others cannot run."""
    served, idle = {}, {}
    for name, plugin in controllers.items():
        missing = await _not_served(client, plugin.WATCHES)
        if missing:
            message = f"the API server does not serve {', '.join(missing)}: install the CRDs"
            log.warning("admission check controller idle", controller=name, missing=missing)
            idle[name] = Activity(False, "ResourcesNotServed", message)
        else:
            served[name] = plugin
    return served, idle


async def register_admission_checks(
    manager: Manager, pm: pluggy.PluginManager, namespace: str
) -> CheckRunner:
    """The plugins' controllers as the leader-only runnable ``admission-checks``."""
    recorder = EventRecorder(manager.leader_client, "kq-admission-checks", namespace)
    served, idle = await served_controllers(manager.client, check_controllers(pm))
    runner = CheckRunner(manager.leader_client, served, manager.informer, recorder, idle=idle)
    manager.add(NAME, runner.run, leader_only=True)
    return runner
