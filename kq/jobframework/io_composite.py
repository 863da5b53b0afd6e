"""Job keys and loading for composable kinds (pods and pod groups), read from the informers.

A single pod's key is ``pod/<namespace>/<name>``, as any job's. A group's key names the group
instead, ``pod/<namespace>/group:<name>`` (a ``:`` never appears in an object name), so all
its pods share one key and one worker reconciles the group at a time, as upstream's
``group/<namespace>`` request keys do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kq.jobframework.interface import ComposableJob
from kq.jobframework.objects import Obj, controller_owner, meta, name, namespace, uid
from kq.runtime.store import NAMESPACE_INDEX, OWNER_INDEX, Store

GROUP_PREFIX = "group:"


def member_key(integration: ComposableJob, obj: Obj) -> str:
    """The ``<namespace>/<name>`` part of the job key ``obj`` is reconciled under."""
    group = integration.group_name(obj)
    return f"{namespace(obj)}/{GROUP_PREFIX}{group}" if group else f"{namespace(obj)}/{name(obj)}"


def group_key_of_workload(workload: Obj) -> str | None:
    """The job key part of a group's Workload: it has pod owners but no controller."""
    owners = meta(workload).get("ownerReferences") or ()
    if controller_owner(workload) is not None or not any(o.get("kind") == "Pod" for o in owners):
        return None
    return f"{namespace(workload)}/{GROUP_PREFIX}{name(workload)}"


@dataclass(frozen=True)
class Loaded:
    job: Obj | None
    """The composed job; ``None`` when no member exists any more."""
    workloads: Sequence[Obj]


def load(
    integration: ComposableJob, jobs: Store, workloads: Store, ns: str, job_name: str
) -> Loaded:
    """The job under key ``ns/job_name`` and the Workloads that may be its own."""
    if job_name.startswith(GROUP_PREFIX):
        group = job_name[len(GROUP_PREFIX) :]
        members = [
            obj
            for obj in jobs.by_index(NAMESPACE_INDEX, ns)
            if integration.group_name(obj) == group
        ]
        members.sort(key=lambda obj: (str(meta(obj).get("creationTimestamp", "")), name(obj)))
        found = workloads.get(f"{ns}/{group}")
        if not members:
            # A Workload of that name with a controller belongs to someone else: not an orphan.
            orphans = [found] if found is not None and controller_owner(found) is None else []
            return Loaded(None, orphans)
        # ``owns`` tells the group's own Workload from another's that only has its name.
        return Loaded(integration.compose(members), [found] if found is not None else [])
    obj = jobs.get(f"{ns}/{job_name}")
    if obj is None or integration.group_name(obj):
        return Loaded(None, [])
    return Loaded(integration.compose([obj]), workloads.by_index(OWNER_INDEX, uid(obj)))
