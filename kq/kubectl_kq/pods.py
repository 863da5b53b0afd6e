"""``kubectl kq list pods --for KIND/NAME``: the pods of a job, found by the label selector
its integration gives its pods (kueuectl's ``PodLabelSelector``), in kubectl's columns."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from typing import Any

from kq.kubectl_kq.create import UsageError
from kq.kubectl_kq.output import dump
from kq.kubectl_kq.table import age, render
from kq.runtime.client import KubeClient
from kq.runtime.resources import JOBS, PODS, Resource

Object = dict[str, Any]
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", namespaced=True)
MPIJOBS = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", namespaced=True)
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
SELECTORS: Mapping[str, tuple[Resource, str]] = {
    "job": (JOBS, "batch.kubernetes.io/job-name={name}"),
    "jobset": (JOBSETS, "jobset.sigs.k8s.io/jobset-name={name}"),
    "mpijob": (
        MPIJOBS,
        "training.kubeflow.org/job-name={name},training.kubeflow.org/operator-name=mpi-operator",
    ),
    "pod": (PODS, GROUP_LABEL + "={group}"),
}
ALIASES = {
    "jobs": "job", "job.batch": "job", "jobs.batch": "job",
    "jobsets": "jobset", "jobset.jobset.x-k8s.io": "jobset", "jobsets.jobset.x-k8s.io": "jobset",
    "mpijobs": "mpijob", "mpijob.kubeflow.org": "mpijob", "mpijobs.kubeflow.org": "mpijob",
    "pods": "pod", "po": "pod",
}  # fmt: skip
HEADERS = ("Name", "Ready", "Status", "Restarts", "Age")


def _for(value: str) -> tuple[str, str]:
    kind, sep, name = value.partition("/")
    kind = ALIASES.get(kind.lower(), kind.lower())
    if not sep or not name or not kind:
        raise UsageError(
            f"invalid value '{value}' used in --for flag; value must be in the format "
            "TYPE[.API-GROUP]/NAME"
        )
    if kind not in SELECTORS:
        raise UsageError(f"unsupported kind: {kind}")
    return kind, name


async def _named(client: KubeClient, resource: Resource, name: str, ns: str) -> list[Object]:
    query = [("fieldSelector", f"metadata.name={name}")]
    items: list[Object] = (await client.list(resource, namespace=ns, query=query))["items"]
    return items


async def _selector(client: KubeClient, kind: str, name: str, ns: str) -> str | None:
    """The pods' label selector; None when the object does not exist."""
    resource, template = SELECTORS[kind]
    found = await _named(client, resource, name, ns)
    if not found:
        return None
    if kind != "pod":
        return template.format(name=name)
    group = (found[0]["metadata"].get("labels") or {}).get(GROUP_LABEL)
    # A pod outside any group is listed alone, by its name.
    return template.format(group=group) if group else None


def _row(pod: Object, now: float) -> tuple[str, ...]:
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or []) or len(containers)
    ready = sum(1 for c in containers if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in containers)
    return (
        pod["metadata"]["name"],
        f"{ready}/{total}",
        _status(pod),
        str(restarts),
        age(pod["metadata"].get("creationTimestamp"), now),
    )


def _status(pod: Object) -> str:
    """kubectl's STATUS, simplified: deletion, a container's waiting or terminated reason,
    the pod's reason, else its phase."""
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    status = pod.get("status") or {}
    for container in status.get("containerStatuses") or ():
        state = container.get("state") or {}
        for key in ("waiting", "terminated"):
            reason = (state.get(key) or {}).get("reason")
            if reason:
                return str(reason)
    return str(status.get("reason") or status.get("phase") or "Unknown")


async def list_pods(client: KubeClient, args: argparse.Namespace) -> str:
    kind, name = _for(args.for_object)
    ns = args.namespace
    selector = await _selector(client, kind, name, ns)
    if selector is None and kind == "pod":
        pods = await _named(client, PODS, name, ns)
    elif selector is None:
        return ""
    else:
        query = [("labelSelector", ",".join(s for s in (selector, args.selector) if s))]
        if args.field_selector:
            query.append(("fieldSelector", args.field_selector))
        pods = (await client.list(PODS, namespace=ns, query=query))["items"]
    pods.sort(key=lambda p: p["metadata"]["name"])
    if args.output:
        return dump(pods, args.output)
    now = time.time()
    return render(HEADERS, [_row(p, now) for p in pods], args.no_headers)
