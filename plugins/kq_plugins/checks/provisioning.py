"""Kueue's ProvisioningRequest admission check (``kueue.x-k8s.io/provisioning-request``).

Once a Workload reserves quota, each of its checks asks the cluster autoscaler for capacity
through a ProvisioningRequest (autoscaling.x-k8s.io/v1) and one PodTemplate per pod set, and
reports the request's conditions as the check's state. What to create and which state to
report are decided in ``provreq_build`` and ``provreq_state``; this module does the I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from kq.admissionchecks import (
    PENDING,
    READY,
    Activity,
    ApiError,
    CheckContext,
    CheckUpdate,
    Obj,
    Resource,
)
from kq.hookspecs import Register, hookimpl
from kq_plugins.checks.provreq_build import (
    KUEUE_GROUP,
    REQUEST_API_VERSION,
    Config,
    InconsistentAssignments,
    MergedPodSet,
    TemplateError,
    controller_ref,
    current_request,
    merge_pod_sets,
    meta,
    pod_template,
    request_body,
    request_name,
    request_needed,
    resolve_config,
    template_name,
)
from kq_plugins.checks.provreq_state import (
    check_state,
    from_request,
    has_quota,
    inactive,
    is_evicted,
    is_finished,
    may_create,
    next_attempt,
    not_needed,
    update,
)

log = logging.getLogger(__name__)

PROVISIONING_REQUEST_CONFIGS = Resource(
    KUEUE_GROUP, "v1beta1", "provisioningrequestconfigs", "ProvisioningRequestConfig", False
)
PROVISIONING_REQUESTS = Resource(
    "autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest", True
)
POD_TEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate", True)
RESOURCE_FLAVORS = Resource(KUEUE_GROUP, "v1beta1", "resourceflavors", "ResourceFlavor", False)

BAD_PARAMETERS_REF = "BadParametersRef"
_OWNER_INDEX = "owner"
"""The index every ``Store`` keeps of objects by owner UID."""
_RETRY_CAP_SECONDS = 300.0


class ProvisioningCheck:
    """The controller of every AdmissionCheck with ``controllerName`` below."""

    CONTROLLER_NAME: ClassVar[str] = "kueue.x-k8s.io/provisioning-request"
    WATCHES: ClassVar[tuple[Resource, ...]] = (
        PROVISIONING_REQUEST_CONFIGS,
        PROVISIONING_REQUESTS,
        POD_TEMPLATES,
        RESOURCE_FLAVORS,
    )

    def __init__(self) -> None:
        self._failures: dict[str, int] = {}
        """Failed passes in a row per Workload key, for the backoff of the next one."""

    def activity(self, check: Obj, ctx: CheckContext) -> Activity:
        found = resolve_config(check, ctx.store(PROVISIONING_REQUEST_CONFIGS).get)
        if isinstance(found, str):
            return Activity(False, BAD_PARAMETERS_REF, found)
        return Activity.ok()

    async def sync(
        self, workload: Obj, checks: Sequence[Obj], ctx: CheckContext
    ) -> Sequence[CheckUpdate]:
        run = _Pass(workload, ctx)
        updates = await run.sync(checks)
        self._settle(workload, ctx, run.failed)
        return updates

    def _settle(self, workload: Obj, ctx: CheckContext, failed: bool) -> None:
        """Schedule another pass after a failed write, backing off while failures repeat."""
        key = f"{meta(workload).get('namespace')}/{meta(workload).get('name')}"
        if not failed:
            self._failures.pop(key, None)
            return
        count = self._failures.get(key, 0)
        self._failures[key] = count + 1
        ctx.enqueue(key, after=min(2.0**count, _RETRY_CAP_SECONDS))


@dataclass
class _Plan:
    """One check's part of a pass: its config, whether it needs capacity, its request."""

    current: Obj
    config: Config | None = None
    needed: bool = False
    request: Obj | None = None
    update: CheckUpdate | None = None

    @property
    def state(self) -> str:
        return self.update.state if self.update else str(self.current.get("state") or PENDING)


@dataclass
class _Pass:
    """One sync of one Workload."""

    workload: Obj
    ctx: CheckContext
    failed: bool = False
    inconsistent: bool = False
    deleted_templates: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return str(meta(self.workload).get("name"))

    @property
    def namespace(self) -> str:
        return str(meta(self.workload).get("namespace"))

    def owned(self) -> list[Obj]:
        uid = meta(self.workload).get("uid")
        store = self.ctx.store(PROVISIONING_REQUESTS)
        return store.by_index(_OWNER_INDEX, uid) if uid else []

    async def sync(self, checks: Sequence[Obj]) -> list[CheckUpdate]:
        owned = self.owned()
        if is_finished(self.workload):
            await self._delete(owned)
            return []
        # An evicted Workload keeps its requests, as Kueue does with
        # CleanupProvisioningRequestsOnEviction off.
        if is_evicted(self.workload) or not has_quota(self.workload):
            return []
        plans = [p for c in checks if (p := self._plan(c, owned)) is not None]
        if not self.inconsistent:
            keep = {meta(p.request).get("name") for p in plans if p.request is not None}
            await self._delete([r for r in owned if meta(r).get("name") not in keep])
        updates = []
        for plan in plans:
            found = await self._converge(plan)
            if found is not None:
                self._announce(plan.current, found)
                updates.append(found)
        return updates

    def _plan(self, check: Obj, owned: Sequence[Obj]) -> _Plan | None:
        name = str(meta(check).get("name"))
        current = check_state(self.workload, name)
        if current is None:
            return None
        config = resolve_config(check, self.ctx.store(PROVISIONING_REQUEST_CONFIGS).get)
        if isinstance(config, str):
            return _Plan(current, update=inactive(current))
        try:
            needed = request_needed(self.workload, config)
        except InconsistentAssignments as exc:
            log.warning("workload %s/%s: %s", self.namespace, self.name, exc)
            self.inconsistent = True
            return None
        if not needed:
            return _Plan(current, config, update=not_needed(current))
        request = current_request(self.name, name, config, owned)
        found = None if request is None else from_request(current, request, self.workload, config)
        return _Plan(current, config, True, request, found)

    async def _converge(self, plan: _Plan) -> CheckUpdate | None:
        """Create the next request when one is due; otherwise keep the current one's
        templates owned by it."""
        if plan.config is None or not plan.needed or plan.state == READY:
            return plan.update
        if may_create(plan.request, plan.state, self.workload):
            return await self._create(plan, plan.config)
        if plan.request is not None:
            await self._adopt_templates(plan.request, {})
        return plan.update

    async def _create(self, plan: _Plan, config: Config) -> CheckUpdate | None:
        check = str(plan.current.get("name"))
        name = request_name(
            self.name, check, next_attempt(plan.request, plan.current, self.workload)
        )
        try:
            groups = merge_pod_sets(self.workload, config)
        except InconsistentAssignments as exc:
            log.warning("workload %s/%s: %s", self.namespace, self.name, exc)
            return plan.update
        made: dict[str, Obj] = {}
        for group in groups:
            ptn = template_name(name, group.name)
            try:
                made[ptn] = await self._ensure_template(group, ptn)
            except (ApiError, TemplateError) as exc:
                return self._create_failed(plan, f'Error creating PodTemplate "{ptn}": {_why(exc)}')
        entries = [(template_name(name, g.name), g.count) for g in groups]
        try:
            created = await self.ctx.client.create(
                PROVISIONING_REQUESTS, request_body(self.workload, name, config, entries)
            )
        except ApiError as exc:
            cached = self.ctx.store(PROVISIONING_REQUESTS).get(f"{self.namespace}/{name}")
            if exc.conflict and cached is None:
                # An earlier pass made it and the cache is behind; its event brings us back.
                return plan.update
            return self._create_failed(
                plan, f'Error creating ProvisioningRequest "{name}": {_why(exc)}'
            )
        self.ctx.event(
            self.workload, "ProvisioningRequestCreated", f'Created ProvisioningRequest: "{name}"'
        )
        await self._adopt_templates(created, made)
        if plan.request is not None and meta(plan.request).get("name") != name:
            await self._delete([plan.request])
        # What the new request, with no conditions yet, reports.
        return update(plan.current, state=PENDING, message="")

    async def _ensure_template(self, group: MergedPodSet, name: str) -> Obj:
        """The PodTemplate ``name``: the cached one if there is, else a new one."""
        cached = self.ctx.store(POD_TEMPLATES).get(f"{self.namespace}/{name}")
        if cached is not None and name not in self.deleted_templates:
            return cached
        flavors = self.ctx.store(RESOURCE_FLAVORS).get
        body = pod_template(self.workload, group, name, flavors)
        try:
            return await self.ctx.client.create(POD_TEMPLATES, body)
        except ApiError as exc:
            if not exc.conflict:
                raise
            return body

    def _create_failed(self, plan: _Plan, message: str) -> CheckUpdate | None:
        self.failed = True
        self.ctx.event(self.workload, "FailedCreate", message, warning=True)
        return update(plan.current, state=plan.state, message=message)

    async def _adopt_templates(self, request: Obj, known: dict[str, Obj]) -> None:
        """Make the request the templates' controller, so they go when it goes."""
        uid = meta(request).get("uid")
        if not uid:
            return
        owner = controller_ref(request, REQUEST_API_VERSION, "ProvisioningRequest")
        cache = self.ctx.store(POD_TEMPLATES)
        for name in _template_names(request):
            template = known.get(name) or cache.get(f"{self.namespace}/{name}")
            if template is None:
                continue
            refs = meta(template).get("ownerReferences") or []
            if any(r.get("controller") and r.get("uid") == uid for r in refs):
                continue
            kept = [r for r in refs if not r.get("controller")]
            patch = {"metadata": {"ownerReferences": [*kept, owner]}}
            await self._write(
                self.ctx.client.merge_patch(POD_TEMPLATES, name, patch, namespace=self.namespace)
            )

    async def _delete(self, requests: Iterable[Obj]) -> None:
        """Delete the requests and their PodTemplates (the garbage collector may be absent)."""
        cache = self.ctx.store(POD_TEMPLATES)
        for request in requests:
            name = str(meta(request).get("name"))
            await self._write(
                self.ctx.client.delete(PROVISIONING_REQUESTS, name, namespace=self.namespace)
            )
            for template in _template_names(request):
                if cache.get(f"{self.namespace}/{template}") is not None:
                    self.deleted_templates.add(template)
                    await self._write(
                        self.ctx.client.delete(POD_TEMPLATES, template, namespace=self.namespace)
                    )

    async def _write(self, call: Awaitable[object]) -> None:
        """Await a write; an object already gone is fine, other failures retry the pass."""
        try:
            await call
        except ApiError as exc:
            if not exc.not_found:
                log.warning("workload %s/%s: %s", self.namespace, self.name, exc)
                self.failed = True

    def _announce(self, current: Obj, found: CheckUpdate) -> None:
        old = current.get("state") or PENDING
        if found.state == old:
            return
        message = f"Admission check {found.name} updated state from {old} to {found.state}"
        if found.message:
            message += f" with message: {found.message}"
        self.ctx.event(self.workload, "AdmissionCheckUpdated", message)


def _template_names(request: Obj) -> list[str]:
    pod_sets = (request.get("spec") or {}).get("podSets") or ()
    return [str((ps.get("podTemplateRef") or {}).get("name")) for ps in pod_sets]


def _why(exc: Exception) -> str:
    """The API server's own message when there is one, as Kueue reports it."""
    if isinstance(exc, ApiError) and exc.body and exc.body.get("message"):
        return str(exc.body["message"])
    return str(exc)


@hookimpl(trylast=True)
def kq_register_admission_checks(register: Register) -> None:
    register(ProvisioningCheck)
