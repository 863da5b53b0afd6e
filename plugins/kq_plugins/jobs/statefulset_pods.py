"""The pods of admitted StatefulSets: ungated as they come, deleted when their set is stopped.

Upstream's StatefulSet pods join a pod group with fast admission: once the group's Workload is
admitted, each pod is ungated when it is created, so ``OrderedReady`` sets start pod by pod.
Here the admission is the StatefulSet's ``ADMISSION_ANNOTATION`` (see ``statefulset``): a gated
pod of an admitted set gets its node selector and tolerations and loses the gate; an ungated
pod of a stopped set is deleted, and the StatefulSet makes it again, gated.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from kq.hookspecs import Register, hookimpl
from kq.jobframework.objects import annotations_of, controller_owner, dig, meta, name, namespace
from kq.plugin import ControllerContext, Resource
from kq_plugins.jobs.serving import SUSPENDING_PARENT_ANNOTATION, patch_or_delete, run_passes
from kq_plugins.jobs.statefulset import ADMISSION_ANNOTATION, FRAMEWORK

PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
STATEFULSETS = Resource("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)
GATE = "kueue.x-k8s.io/admission"

Obj = dict[str, Any]


def _gated(pod: Obj) -> bool:
    return any(g.get("name") == GATE for g in dig(pod, "spec", "schedulingGates") or ())


def _admission(sts: Obj | None) -> Obj | None:
    raw = annotations_of(sts).get(ADMISSION_ANNOTATION) if sts is not None else None
    return json.loads(raw) if raw else None


def ungate_patch(pod: Obj, admitted: Obj) -> Obj:
    """The merge patch that gives ``pod`` the admission's placement and lifts kq's gate."""
    gates = [g for g in dig(pod, "spec", "schedulingGates") or () if g.get("name") != GATE]
    tolerations = list(dig(pod, "spec", "tolerations") or ())
    tolerations += [t for t in admitted.get("tolerations") or () if t not in tolerations]
    spec: Obj = {"schedulingGates": gates or None}
    if admitted.get("nodeSelector"):
        spec["nodeSelector"] = admitted["nodeSelector"]
    if tolerations:
        spec["tolerations"] = tolerations
    return {"spec": spec}


def actions(pods: list[Obj], sets: dict[str, Obj]) -> list[tuple[str, Obj, Obj | None]]:
    """``(verb, pod, patch)`` for each pod of a StatefulSet kq manages that is out of line."""
    out: list[tuple[str, Obj, Obj | None]] = []
    for pod in pods:
        if annotations_of(pod).get(SUSPENDING_PARENT_ANNOTATION) != FRAMEWORK:
            continue
        owner = controller_owner(pod) or {}
        if owner.get("kind") != "StatefulSet" or meta(pod).get("deletionTimestamp"):
            continue
        admitted = _admission(sets.get(f"{namespace(pod)}/{owner.get('name', '')}"))
        if admitted is not None and _gated(pod):
            out.append(("ungate", pod, ungate_patch(pod, admitted)))
        elif admitted is None and not _gated(pod):
            out.append(("delete", pod, None))
    return out


class StatefulSetPods:
    NAME: ClassVar[str] = "statefulset-pods"
    WATCHES: ClassVar[tuple[Resource, ...]] = (PODS, STATEFULSETS)

    async def run(self, ctx: ControllerContext) -> None:
        await run_passes(ctx, self.WATCHES, lambda: self._pass(ctx))

    async def _pass(self, ctx: ControllerContext) -> bool:
        sets = {f"{namespace(s)}/{name(s)}": s for s in ctx.store(STATEFULSETS).values()}
        ok = True
        for _, pod, patch in actions(ctx.store(PODS).values(), sets):
            ok &= await patch_or_delete(ctx, PODS, pod, patch)
        return ok


@hookimpl
def kq_register_controllers(register: Register) -> None:
    register(StatefulSetPods)
