"""``kubectl kq create``: ClusterQueues, LocalQueues and ResourceFlavors from kueuectl's flags.

Quotas read as kueuectl's: ``"alpha:cpu=9;memory=36Gi,beta:cpu=18"``, one flavor per comma;
flavors covering the same resources share a resource group.
"""

from __future__ import annotations

import argparse
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import CLUSTER_QUEUES, LOCAL_QUEUES, RESOURCE_FLAVORS, Resource

Object = dict[str, Any]
API = "kueue.x-k8s.io/v1beta1"


class UsageError(ValueError):
    """A flag kueuectl would refuse; the message says which."""


def _pairs(text: str, sep: str, what: str) -> dict[str, str]:
    out = {}
    for item in filter(None, text.split(sep)):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"invalid {what} {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


def _quotas(specs: list[str], flag: str) -> dict[str, dict[str, str]]:
    """flavor -> resource -> quantity."""
    out: dict[str, dict[str, str]] = {}
    for spec in (s for text in specs for s in text.split(",") if s):
        flavor, colon, resources = spec.partition(":")
        if not colon or not flavor:
            raise UsageError(f"--{flag}: {spec!r} should be FLAVOR:RESOURCE=QUANTITY;...")
        out.setdefault(flavor, {}).update(_pairs(resources, ";", f"--{flag} resource"))
    return out


def resource_groups(args: argparse.Namespace) -> list[Object]:
    nominal = _quotas(args.nominal_quota, "nominal-quota")
    limits = {
        "borrowingLimit": _quotas(args.borrowing_limit, "borrowing-limit"),
        "lendingLimit": _quotas(args.lending_limit, "lending-limit"),
    }
    for field, by_flavor in limits.items():
        for flavor, resources in by_flavor.items():
            if not set(resources) <= set(nominal.get(flavor, {})):
                raise UsageError(f"{field} of {flavor} names a resource with no nominal quota")
    groups: dict[tuple[str, ...], list[Object]] = {}
    for flavor, resources in nominal.items():
        entries = []
        for name, quantity in resources.items():
            entry = {"name": name, "nominalQuota": quantity}
            for field, by_flavor in limits.items():
                if name in by_flavor.get(flavor, {}):
                    entry[field] = by_flavor[flavor][name]
            entries.append(entry)
        groups.setdefault(tuple(resources), []).append({"name": flavor, "resources": entries})
    return [{"coveredResources": list(k), "flavors": v} for k, v in groups.items()]


def cluster_queue(args: argparse.Namespace) -> Object:
    spec: Object = {"resourceGroups": resource_groups(args)}
    if args.cohort:
        spec["cohort"] = args.cohort
    if args.queuing_strategy:
        spec["queueingStrategy"] = args.queuing_strategy
    if args.namespace_selector is not None:
        labels = _pairs(args.namespace_selector, ",", "--namespace-selector")
        spec["namespaceSelector"] = {"matchLabels": labels} if labels else {}
    preemption = {}
    if args.reclaim_within_cohort:
        preemption["reclaimWithinCohort"] = args.reclaim_within_cohort
    if args.preemption_within_cluster_queue:
        preemption["withinClusterQueue"] = args.preemption_within_cluster_queue
    if preemption:
        spec["preemption"] = preemption
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": args.name},
            "spec": spec}  # fmt: skip


def resource_flavor(args: argparse.Namespace) -> Object:
    spec: Object = {}
    if args.node_labels:
        spec["nodeLabels"] = _pairs(args.node_labels, ",", "--node-labels")
    taints = []
    for text in (t for arg in args.node_taints for t in arg.split(",") if t):
        key_value, _, effect = text.partition(":")
        key, _, value = key_value.partition("=")
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        taints.append(taint)
    if taints:
        spec["nodeTaints"] = taints
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": args.name},
            "spec": spec}  # fmt: skip


async def local_queue(client: KubeClient, args: argparse.Namespace) -> Object:
    if not args.clusterqueue:
        raise UsageError("must specify a ClusterQueue name (-c, --clusterqueue)")
    if not args.ignore_unknown_cq:
        try:
            await client.get(CLUSTER_QUEUES, args.clusterqueue)
        except ApiError as exc:
            if not exc.not_found:
                raise
            raise UsageError(f"ClusterQueue {args.clusterqueue} not found") from None
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": {"name": args.name, "namespace": args.namespace},
        "spec": {"clusterQueue": args.clusterqueue},
    }


async def create(client: KubeClient, args: argparse.Namespace) -> str:
    kind = args.kind
    resource: Resource
    if kind == "clusterqueue":
        resource, body = CLUSTER_QUEUES, cluster_queue(args)
    elif kind == "localqueue":
        resource, body = LOCAL_QUEUES, await local_queue(client, args)
    else:
        resource, body = RESOURCE_FLAVORS, resource_flavor(args)
    query = [("dryRun", "All")] if args.dry_run == "server" else []
    if args.dry_run != "client":
        await client.request("POST", resource.path(body["metadata"].get("namespace")),
                             query=query, body=body)  # fmt: skip
    suffix = {"client": " (dry run)", "server": " (server dry run)"}.get(args.dry_run, "")
    return f"{resource.plural[:-1]}.{resource.group}/{args.name} created{suffix}\n"
