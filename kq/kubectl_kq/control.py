"""``kubectl kq stop|resume``: a Workload's ``spec.active``, a queue's ``spec.stopPolicy``."""

from __future__ import annotations

import argparse
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.resources import CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS


async def stop_or_resume(client: KubeClient, args: argparse.Namespace) -> str:
    stopping = args.verb == "stop"
    patch: dict[str, Any]
    if args.kind == "workload":
        resource, namespace = WORKLOADS, args.namespace
        patch = {"spec": {"active": not stopping}}
    else:
        resource = CLUSTER_QUEUES if args.kind == "clusterqueue" else LOCAL_QUEUES
        namespace = None if resource is CLUSTER_QUEUES else args.namespace
        # Hold keeps what runs; HoldAndDrain (kueuectl's default) also evicts it.
        policy = "Hold" if getattr(args, "keep_already_running", False) else "HoldAndDrain"
        patch = {"spec": {"stopPolicy": policy if stopping else "None"}}
    if args.dry_run != "client":
        query = [("dryRun", "All")] if args.dry_run == "server" else []
        path = resource.path(namespace, args.name)
        await client.request("PATCH", path, query=query, body=patch,
                             content_type="application/merge-patch+json")  # fmt: skip
    suffix = {"client": " (dry run)", "server": " (server dry run)"}.get(args.dry_run, "")
    done = "stopped" if stopping else "resumed"
    return f"{resource.plural[:-1]}.{resource.group}/{args.name} {done}{suffix}\n"
