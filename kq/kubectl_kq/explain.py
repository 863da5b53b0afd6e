"""``kubectl kq explain workload NAME``: kq's explanation of why a workload waits, printed."""

from __future__ import annotations

import argparse
from urllib.parse import quote

from kq.runtime.client import KubeClient
from kq.visibility.summary import GROUP

VERSION = "v1beta1"


async def explain_workload(client: KubeClient, args: argparse.Namespace) -> str:
    path = (
        f"/apis/{GROUP}/{VERSION}/namespaces/{quote(args.namespace, safe='')}"
        f"/workloads/{quote(args.name, safe='')}/explanation"
    )
    answer = await client.request("GET", path)
    return "".join(f"{line}\n" for line in answer.get("lines") or ())
