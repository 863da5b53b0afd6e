"""``kubectl kq list``: kueuectl's columns for queues, flavors and workloads.

A workload's POSITION IN QUEUE is its position in its LocalQueue, read from the visibility
API's ClusterQueue summary (one read per ClusterQueue), as kueuectl shows it.
"""

from __future__ import annotations

import argparse
from typing import Any

from kq.kubectl_kq.output import dump
from kq.kubectl_kq.table import age, human_duration, parse_time, render
from kq.runtime.client import KubeClient
from kq.runtime.resources import CLUSTER_QUEUES, LOCAL_QUEUES, RESOURCE_FLAVORS
from kq.visibility.summary import GROUP

Object = dict[str, Any]
JOB_TYPE_MAX = 20
VISIBILITY = f"/apis/{GROUP}/v1beta2/clusterqueues/{{}}/pendingworkloads"


def query(args: argparse.Namespace) -> list[tuple[str, str]]:
    query = []
    if getattr(args, "selector", None):
        query.append(("labelSelector", args.selector))
    if getattr(args, "field_selector", None):
        query.append(("fieldSelector", args.field_selector))
    return query


def _true(obj: Object, kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _condition(obj: Object, kind: str) -> Object | None:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c.get("type") == kind), None)


async def list_cluster_queues(client: KubeClient, args: argparse.Namespace) -> str:
    items = (await client.list(CLUSTER_QUEUES, query=query(args)))["items"]
    if args.active is not None:
        items = [cq for cq in items if _true(cq, "Active") == args.active]
    if args.output:
        return dump(items, args.output)
    rows = [
        (
            cq["metadata"]["name"],
            cq["spec"].get("cohort", ""),
            (cq.get("status") or {}).get("pendingWorkloads", 0),
            (cq.get("status") or {}).get("admittedWorkloads", 0),
            str(_true(cq, "Active")).lower(),
            age(cq["metadata"].get("creationTimestamp")),
        )
        for cq in items
    ]
    headers = ("Name", "Cohort", "Pending Workloads", "Admitted Workloads", "Active", "Age")
    return render(headers, rows, args.no_headers)


def namespaced(args: argparse.Namespace, headers: tuple[str, ...], rows: list[Any]) -> str:
    if args.all_namespaces:
        return render(("Namespace", *headers), rows, args.no_headers)
    return render(headers, [row[1:] for row in rows], args.no_headers)


async def list_local_queues(client: KubeClient, args: argparse.Namespace) -> str:
    ns = None if args.all_namespaces else args.namespace
    items = (await client.list(LOCAL_QUEUES, namespace=ns, query=query(args)))["items"]
    if args.clusterqueue:
        items = [lq for lq in items if lq["spec"].get("clusterQueue") == args.clusterqueue]
    if args.output:
        return dump(items, args.output)
    rows = [
        (
            lq["metadata"]["namespace"],
            lq["metadata"]["name"],
            lq["spec"].get("clusterQueue", ""),
            (lq.get("status") or {}).get("pendingWorkloads", 0),
            (lq.get("status") or {}).get("admittedWorkloads", 0),
            age(lq["metadata"].get("creationTimestamp")),
        )
        for lq in items
    ]
    headers = ("Name", "ClusterQueue", "Pending Workloads", "Admitted Workloads", "Age")
    return namespaced(args, headers, rows)


async def list_resource_flavors(client: KubeClient, args: argparse.Namespace) -> str:
    items = (await client.list(RESOURCE_FLAVORS, query=query(args)))["items"]
    if args.output:
        return dump(items, args.output)
    rows = []
    for rf in items:
        labels = (rf.get("spec") or {}).get("nodeLabels") or {}
        rows.append(
            (
                rf["metadata"]["name"],
                ", ".join(sorted(f"{k}={v}" for k, v in labels.items())),
                age(rf["metadata"].get("creationTimestamp")),
            )
        )
    return render(("Name", "Node Labels", "Age"), rows, args.no_headers)


def status(wl: Object) -> str:
    """Kueue's workload status names."""
    if _true(wl, "Finished"):
        return "finished"
    if _true(wl, "Admitted"):
        return "admitted"
    if _true(wl, "QuotaReserved"):
        return "quotaReserved"
    return "pending"


STATUSES = {"all", "pending", "quotareserved", "admitted", "finished"}


def wanted(wl: Object, statuses: list[str]) -> bool:
    wanted = {s.lower() for s in statuses}
    return not wanted or "all" in wanted or status(wl).lower() in wanted


def exec_time(wl: Object, now: float) -> str:
    admitted = _condition(wl, "Admitted")
    if admitted is None or admitted.get("status") != "True":
        return ""
    start = parse_time(admitted.get("lastTransitionTime")) or now
    end = now
    finished = _condition(wl, "Finished")
    if finished is not None and finished.get("status") == "True":
        end = parse_time(finished.get("lastTransitionTime")) or now
    return human_duration(end - start)
