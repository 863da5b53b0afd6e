"""The rules of a delete: preconditions, the propagation policy, graceful deletion, orphaning."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from kq.sandbox.apiserver import errors
from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.store import Obj, Store


def check_preconditions(rt: ResourceType, name: str, meta: Obj, options: dict[str, Any]) -> None:
    """Refuse the delete when the options' uid or resourceVersion is not the live one's."""
    pre = options.get("preconditions") or {}
    if pre.get("uid") and pre["uid"] != meta.get("uid"):
        raise errors.conflict(
            rt.group,
            rt.plural,
            name,
            f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: "
            f"{meta.get('uid')}",
        )
    if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
        raise errors.conflict(rt.group, rt.plural, name, errors.STALE)


def propagation_policy(rt: ResourceType, options: dict[str, Any]) -> str:
    """The policy asked for, else the legacy orphanDependents, else the resource's default."""
    policy = options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is not None:
        policy = "Orphan" if options["orphanDependents"] else "Background"
    if policy is None:
        policy = "Orphan" if (rt.group, rt.kind) == ("batch", "Job") else "Background"
    if policy not in ("Orphan", "Background", "Foreground"):
        raise errors.bad_request(f"invalid propagationPolicy: {policy}")
    return str(policy)


def grace_seconds(rt: ResourceType, live: Obj, options: dict[str, Any]) -> int:
    """Seconds of graceful deletion: only bound, running pods get any."""
    if (rt.group, rt.kind) != ("", "Pod"):
        return 0
    spec, status = live.get("spec") or {}, live.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    grace = options.get("gracePeriodSeconds")
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    return _at_least_one_if_negative(int(grace))


def _at_least_one_if_negative(grace: int) -> int:
    """kube-apiserver reads a negative period as 1 s on the delete path."""
    return grace if grace >= 0 else 1


def next_grace(rt: ResourceType, live: Obj, options: dict[str, Any]) -> int | None:
    """The grace period this delete leaves the object with; None leaves it as it is.

    A deletion already started keeps its period unless the delete asks for a shorter one; one
    started without a period (0) is finished by any delete.
    """
    meta = live["metadata"]
    if not meta.get("deletionTimestamp"):
        return grace_seconds(rt, live, options)
    current = int(meta.get("deletionGracePeriodSeconds") or 0)
    asked = options.get("gracePeriodSeconds")
    if current <= 0:
        return 0
    if asked is None:
        return None
    asked = _at_least_one_if_negative(int(asked))
    return asked if asked < current else None


def mark_deleting(meta: dict[str, Any], grace: int) -> None:
    """Start graceful deletion, or shorten a started one to ``grace`` seconds."""
    started = meta.get("deletionTimestamp")
    if not started:
        when = datetime.now(UTC) + timedelta(seconds=grace)
    else:
        current = int(meta.get("deletionGracePeriodSeconds") or 0)
        if grace >= current:
            return
        # Earlier by the difference of the periods, as kube-apiserver does: possibly in the past.
        when = datetime.fromisoformat(started) - timedelta(seconds=current - grace)
    meta["deletionTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    meta["deletionGracePeriodSeconds"] = grace


def finalized(meta: dict[str, Any], old_meta: dict[str, Any]) -> bool:
    """Whether an update leaves a deleting object without finalizers and so removes it.

    As kube-apiserver's ShouldDeleteDuringUpdate: only once its grace period is none or 0; a pod
    still in its period stays until a delete ends it (the kubelet's, with grace 0).
    """
    if meta.get("finalizers") or not old_meta.get("deletionTimestamp"):
        return False
    return not old_meta.get("deletionGracePeriodSeconds")


def orphan(store: Store, uid: str) -> None:
    """Drop the owner ``uid`` from its dependents' ownerReferences."""
    for resource, ns, name in sorted(store.dependents.get(uid, set())):
        obj = store.get(resource, ns, name)
        if obj is None:
            continue
        new = copy.deepcopy(obj)
        refs = [r for r in new["metadata"].get("ownerReferences") or () if r.get("uid") != uid]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        store.put(resource, new, obj)
