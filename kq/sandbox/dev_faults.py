"""``kq dev node|pool fail|recover`` and ``kq dev provreq fail|revoke|expire``: faults injected
into a running sandbox through its API server, found by its data directory or kubeconfig."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.sandbox.cluster.driver import set_failure
from kq.sandbox.cluster.provreq_faults import inject


def _sandbox_kubeconfig(args: argparse.Namespace) -> Path | None:
    kubeconfig = args.kubeconfig or Path(args.data_dir) / "kubeconfig"
    if kubeconfig.is_file():
        return Path(kubeconfig)
    print(
        f"kq dev: no sandbox's kubeconfig at {kubeconfig} (start `kq dev` first)", file=sys.stderr
    )
    return None


def run_failure(args: argparse.Namespace) -> int:
    return asyncio.run(_failure(args))


async def _failure(args: argparse.Namespace) -> int:
    kubeconfig = _sandbox_kubeconfig(args)
    if kubeconfig is None:
        return 2
    failed = args.action == "fail"
    target = {"node": args.name} if args.dev_command == "node" else {"pool": args.name}
    async with await KubeClient.connect(kubeconfig) as client:
        try:
            names = await set_failure(client, failed=failed, mode=args.mode, **target)
        except ApiError as exc:
            print(f"kq dev: {exc}", file=sys.stderr)
            return 1
    if not names:
        print(f"kq dev: no nodes in pool {args.name}", file=sys.stderr)
        return 1
    print(f"{'failed' if failed else 'recovered'}: {', '.join(names)}")
    return 0


def run_provreq_fault(args: argparse.Namespace) -> int:
    return asyncio.run(_provreq_fault(args))


async def _provreq_fault(args: argparse.Namespace) -> int:
    kubeconfig = _sandbox_kubeconfig(args)
    if kubeconfig is None:
        return 2
    async with await KubeClient.connect(kubeconfig) as client:
        try:
            written = await inject(client, args.namespace, args.name, args.action, args.message)
        except ApiError as exc:
            print(f"kq dev: {exc}", file=sys.stderr)
            return 1
    print(f"{args.namespace}/{args.name}: {written['type']}=True ({written['reason']})")
    return 0
