"""The garbage collector a bare kube-apiserver lacks, for the kinds the simulated cluster watches.

Without kube-controller-manager nothing deletes the pods of a deleted Job, the Jobs of a deleted
JobSet, a Job's Workload, or finishes a foreground deletion; the embedded server collects
garbage itself. The driver runs this on each pass when ``Settings.collect_garbage`` is set
(``kq dev --kubeconfig``). It follows ownerReferences among :data:`KINDS` only, as upstream's
collector does among every kind: an owner of another kind is never judged gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import Resource
from kq.sandbox.cluster.actions import Action, Delete, Obj, Patch, Ref, meta

KINDS = (
    "JobSet", "Job", "Pod", "RayJob", "RayCluster", "MPIJob", "ConfigMap",
    "Workload", "ProvisioningRequest", "PodTemplate",
    "Deployment", "ReplicaSet", "StatefulSet", "LeaderWorkerSet", "Service",
)  # fmt: skip
"""Owner and dependent kinds collected: the job kinds, their children, and Kueue's objects."""
_FOREGROUND = "foregroundDeletion"


def _owners(obj: Obj) -> list[Obj]:
    return [r for r in meta(obj).get("ownerReferences") or () if r.get("kind") in KINDS]


def orphans(objects: Sequence[Obj]) -> list[Obj]:
    """Objects not being deleted whose every owner of a collected kind is missing from
    ``objects`` (a view of :data:`KINDS`); confirm with :func:`owners_gone` before deleting."""
    uids = {str(meta(o).get("uid")) for o in objects}
    return [
        obj
        for obj in objects
        if (owners := _owners(obj))
        and not meta(obj).get("deletionTimestamp")
        and not uids & {str(r.get("uid")) for r in owners}
    ]


def finish_foreground(objects: Sequence[Obj]) -> list[Action]:
    """An owner deleted in the foreground gets its dependents deleted, then loses its
    ``foregroundDeletion`` finalizer once none is left, which lets the server remove it."""
    dependents: dict[str, list[Obj]] = {}
    for obj in objects:
        for owner in _owners(obj):
            dependents.setdefault(str(owner.get("uid")), []).append(obj)
    actions: list[Action] = []
    for obj in objects:
        m = meta(obj)
        finalizers = list(m.get("finalizers") or ())
        if not m.get("deletionTimestamp") or _FOREGROUND not in finalizers:
            continue
        waiting = dependents.get(str(m.get("uid")), [])
        actions += [
            Delete(Ref.of(d), "Foreground") for d in waiting if not meta(d).get("deletionTimestamp")
        ]
        if not waiting:
            kept = [f for f in finalizers if f != _FOREGROUND]
            actions.append(Patch(Ref.of(obj), {"metadata": {"finalizers": kept or None}}))
    return actions


async def owners_gone(client: KubeClient, resources: Mapping[str, Resource], obj: Obj) -> bool:
    """Whether the server, not only the caches, lacks every collected owner of ``obj``.

    Watches of different kinds are not ordered: kq creates a Job's Workload from its own watch,
    so the Workload can reach the driver before the Job does. Upstream's collector also looks an
    owner up before deleting a dependent it believes orphaned.
    """
    namespace = str(meta(obj).get("namespace") or "") or None
    for ref in _owners(obj):
        resource = resources.get(str(ref["kind"]))
        if resource is None:
            continue  # a kind the server does not serve: no such owner can exist
        try:
            live = await client.get(resource, str(ref["name"]),
                                    namespace if resource.namespaced else None)  # fmt: skip
        except ApiError as exc:
            if exc.not_found:
                continue
            raise
        if meta(live).get("uid") == ref.get("uid"):
            return False
    return True
