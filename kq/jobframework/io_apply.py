"""Applying the reconciler's actions to the API server, in order.

Every write carries the resourceVersion of the object it was decided on (or of the previous
write's answer), so a decision made on a stale cache fails with 409 instead of undoing newer
changes; the caller then stops and reconciles again once the watch has caught up. Workload
status writes are read-modify-write of whole lists (conditions), as the API merges lists by
replacement.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from kq.jobframework import actions as act
from kq.jobframework.constants import RESOURCE_IN_USE_FINALIZER
from kq.jobframework.interface import ComposableJob, GenericJob
from kq.jobframework.objects import Obj, deep_copy, merge_patch, meta, name
from kq.observability.job_metrics import workload_created
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.events import EventRecorder
from kq.runtime.resources import WORKLOADS, Resource
from kq.workload.status import rfc3339

NO_RESERVATION_MESSAGE = "The workload has no reservation"


def with_conditions(
    current: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], now: float
) -> list[dict[str, Any]]:
    """``current`` with ``new`` set; a transition time moves only when the status changes."""
    out = [dict(c) for c in current]
    for condition in new:
        old = next((c for c in out if c.get("type") == condition["type"]), None)
        stamped = {"message": "", "reason": "", **condition}
        if old is not None and old.get("status") == condition["status"]:
            stamped["lastTransitionTime"] = old.get("lastTransitionTime") or rfc3339(now)
        else:
            stamped["lastTransitionTime"] = rfc3339(now)
        out = [c for c in out if c.get("type") != condition["type"]]
        out.append(stamped)
    return out


def _condition(type_: str, status: bool, reason: str, message: str) -> dict[str, str]:
    return {
        "type": type_,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
    }


class ActionApplier:
    """Applies one reconcile's actions; keeps the latest version of every object it wrote."""

    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        job_resource: Resource,
        job: Obj | None,
        workloads: Sequence[Obj],
        integration: GenericJob | None = None,
    ) -> None:
        self._client = client
        self._recorder = recorder
        self._resource = job_resource
        self.job = deep_copy(job) if job is not None else None
        self.workloads = {name(wl): deep_copy(wl) for wl in workloads}
        # A composable job is written member by member; the latest version of each is kept.
        self._composable = integration if isinstance(integration, ComposableJob) else None
        self.members: dict[str, dict[str, Any]] = {}
        if self._composable is not None and job is not None:
            self.members = {name(m): deep_copy(m) for m in self._composable.members(job)}
        # Each member as last meant: what the decision saw, then what was written.
        self._meant = dict(self.members)

    async def apply(self, actions: Sequence[act.Action]) -> None:
        for action in actions:
            await self._apply_one(action)

    async def _apply_one(self, action: act.Action) -> None:
        match action:
            case act.Event(reason=reason, message=message, type=event_type) as event:
                await self._recorder.record(self._about(event), event_type, reason, message)
            case act.UpdateJob(job=job) if self._composable is not None:
                await self._update_members(job)
            case act.UpdateJob(patch=patch):
                self.job = await self._patch_job(patch, "")
            case act.PatchJobStatus(patch=patch, member=member) if member:
                await self._patch_member(member, patch, "status")
            case act.PatchJobStatus(patch=patch):
                self.job = await self._patch_job(patch, "status")
            case act.DeleteMember(member=member):
                await self._delete_member(member)
            case act.CreateWorkload(workload=workload):
                created = await self._client.create(WORKLOADS, deep_copy(workload))
                self.workloads[name(created)] = created
                if self.job is not None:
                    workload_created(self._resource.kind, self.job, created)
            case act.UpdateWorkloadSpec(name=wl_name, spec=spec):
                current = self._workload(wl_name)
                patch = merge_patch({"spec": current.get("spec") or {}}, {"spec": spec})
                await self._patch_workload(wl_name, patch, "")
            case act.SetWorkloadOwners(name=wl_name, owners=owners):
                patch = {"metadata": {"ownerReferences": [dict(o) for o in owners]}}
                await self._patch_workload(wl_name, patch, "")
            case act.DeleteWorkload(namespace=ns, name=wl_name):
                await _ignore_not_found(self._client.delete(WORKLOADS, wl_name, ns))
                self.workloads.pop(wl_name, None)
            case act.RemoveWorkloadFinalizer(name=wl_name):
                await self._remove_finalizer(wl_name)
            case act.FinishWorkload(name=wl_name, reason=reason, message=message):
                finished = _condition("Finished", True, reason, message)
                await self._set_status(wl_name, [finished], {})
            case act.ReleaseQuota():
                await self._release_quota(action)
            case act.SetWorkloadCondition(name=wl_name, condition=condition):
                await self._set_status(wl_name, [dict(condition)], {})
            case act.SetReclaimablePods(name=wl_name, pods=pods):
                reclaimable = [{"name": p.name, "count": p.count} for p in pods]
                await self._set_status(wl_name, [], {"reclaimablePods": reclaimable})

    async def _patch_job(self, patch: Obj, subresource: str) -> dict[str, Any]:
        assert self.job is not None, "job writes need the job"
        job_meta = meta(self.job)
        return await self._client.merge_patch(
            self._resource,
            name(self.job),
            dict(patch),
            namespace=job_meta.get("namespace"),
            resource_version=job_meta.get("resourceVersion"),
            subresource=subresource,
        )

    def _about(self, event: act.Event) -> dict[str, Any]:
        if event.workload:
            return self._workload(event.workload)
        assert self.job is not None, "events are about a job"
        if event.member:
            return self.members.get(event.member, self.job)
        return self.job

    async def _update_members(self, job: Obj) -> None:
        """Write each member of the composed ``job`` that differs from what was read."""
        assert self._composable is not None
        for member in self._composable.members(job):
            meant = self._meant.get(name(member))
            if meant is None:
                continue
            patch = merge_patch(meant, member)
            if patch:
                await self._patch_member(name(member), patch, "")
                self._meant[name(member)] = deep_copy(member)
        self.job = deep_copy(job)

    async def _patch_member(self, member: str, patch: Obj, subresource: str) -> None:
        current = self.members[member]
        # Lists are replaced whole: finalizers and conditions need the version they were read
        # at. Other fields (gates, node selectors, labels) are kq's alone, and the scheduler
        # keeps touching a gated pod's status, so those writes go without it, as upstream's.
        locked = subresource or "finalizers" in (patch.get("metadata") or {})
        self.members[member] = await self._client.merge_patch(
            self._resource,
            member,
            dict(patch),
            namespace=meta(current).get("namespace"),
            resource_version=meta(current).get("resourceVersion") if locked else None,
            subresource=subresource,
        )

    async def _delete_member(self, member: str) -> None:
        ns = meta(self.members[member]).get("namespace")
        try:
            left = await self._client.delete(self._resource, member, ns)
        except ApiError as exc:
            if not exc.not_found:
                raise
            return
        # Held by a finalizer, the object is still there: later writes need its new version.
        if meta(left).get("name") == member:
            self.members[member] = dict(left)

    def _workload(self, wl_name: str) -> dict[str, Any]:
        # ``decide`` only names Workloads it was given, so the name is always known here.
        return self.workloads[wl_name]

    async def _patch_workload(self, wl_name: str, patch: Obj, subresource: str) -> None:
        current = self._workload(wl_name)
        wl_meta = meta(current)
        self.workloads[wl_name] = await self._client.merge_patch(
            WORKLOADS,
            wl_name,
            dict(patch),
            namespace=wl_meta.get("namespace"),
            resource_version=wl_meta.get("resourceVersion"),
            subresource=subresource,
        )

    async def _set_status(
        self, wl_name: str, conditions: Sequence[Mapping[str, Any]], fields: Mapping[str, Any]
    ) -> None:
        status: dict[str, Any] = dict(fields)
        if conditions:
            current = (self._workload(wl_name).get("status") or {}).get("conditions") or ()
            status["conditions"] = with_conditions(current, conditions, time.time())
        await self._patch_workload(wl_name, {"status": status}, "status")

    async def _release_quota(self, action: act.ReleaseQuota) -> None:
        current = (self._workload(action.name).get("status") or {}).get("conditions") or ()
        changes = [_condition("QuotaReserved", False, "Pending", action.message)]
        if any(c.get("type") == "Admitted" for c in current):
            changes.append(_condition("Admitted", False, "NoReservation", NO_RESERVATION_MESSAGE))
        changes.append(_condition("Requeued", action.requeued, action.reason, action.message))
        await self._set_status(action.name, changes, {"admission": None})

    async def _remove_finalizer(self, wl_name: str) -> None:
        current = self._workload(wl_name)
        finalizers = list(meta(current).get("finalizers") or ())
        if RESOURCE_IN_USE_FINALIZER not in finalizers:
            return
        kept = [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER]
        try:
            await self._patch_workload(wl_name, {"metadata": {"finalizers": kept}}, "")
        except ApiError as exc:
            if not exc.not_found:
                raise


async def _ignore_not_found(call: Awaitable[object]) -> None:
    try:
        await call
    except ApiError as exc:
        if not exc.not_found:
            raise
