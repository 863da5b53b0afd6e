"""How the driver applies its controllers' actions through the API server, and what it sees.

Each write's answer is laid over the informers' caches (``overlay``) so the next controller and
the next pass see it before the watch delivers it. Timestamps cross the API as wall time and reach
the controllers as sandbox time (``apitime``). Events go to the ``EventSink``, which writes them
off the loop's path, as a controller's event recorder does.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.informer import Informer
from kq.runtime.resources import PODS, Resource
from kq.sandbox.cluster.actions import (
    Action,
    Create,
    Delete,
    Event,
    Obj,
    Patch,
    Ref,
    describe,
    meta,
)
from kq.sandbox.cluster.apitime import ApiTime
from kq.sandbox.cluster.clock import SandboxClock
from kq.sandbox.cluster.event_sink import EventSink
from kq.sandbox.cluster.overlay import Overlay

log = structlog.get_logger("kq.sandbox.cluster.writer")


class Writer:
    """The loop's reads (informers + overlay) and writes, and what the current pass did."""

    def __init__(
        self,
        client: KubeClient,
        clock: SandboxClock,
        resources: dict[str, Resource],
        informers: dict[str, Informer],
        *,
        binding: bool,
    ) -> None:
        self.client = client
        self.clock = clock
        self.resources = resources
        self.informers = informers
        self.binding = binding
        """Bind through ``pods/binding``, else patch the pod as binding would."""
        self.overlay = Overlay(informers)
        self.api_time = ApiTime(clock)
        self.events = EventSink(client)
        self.changed = False  # this pass wrote something the server did not already have
        self.failed = False  # some action failed: look again after a while

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
            self.events.add(action)
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
        # A delete with no grace removes an object without finalizers at once, yet the answer is
        # its last stored state, which may still show the period an earlier delete started.
        at_once = action.grace_period_seconds == 0 and not meta(result).get("finalizers")
        if lingers and not at_once and not _gone(result):
            self._written(ref.kind, before, result)
        else:  # a Status or its last state: the object is gone
            self.changed = True
            self.overlay.remember(ref.kind, None, ref, "")


def _gone(obj: Obj) -> bool:
    """Whether a write's answer describes an object the server has already removed."""
    m = meta(obj)
    return bool(
        m.get("deletionTimestamp")
        and not m.get("finalizers")
        and not m.get("deletionGracePeriodSeconds")
    )
