"""``kubectl-kq``: argument parsing and dispatch. Flags follow kueuectl's names; the connection
flags (``--kubeconfig``, ``--context``, ``-n``) may come anywhere, as kubectl's."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from collections.abc import Awaitable, Callable, Sequence

from kubernetes_asyncio.config.config_exception import ConfigException

from kq.kubectl_kq import connect
from kq.kubectl_kq.control import stop_or_resume
from kq.kubectl_kq.create import UsageError, create
from kq.kubectl_kq.explain import explain_workload
from kq.kubectl_kq.listing import (
    STATUSES,
    list_cluster_queues,
    list_local_queues,
    list_resource_flavors,
)
from kq.kubectl_kq.output import FORMATS
from kq.kubectl_kq.pods import list_pods
from kq.kubectl_kq.workloads import list_workloads
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError

Command = Callable[[KubeClient, argparse.Namespace], Awaitable[str]]
KINDS = {
    "clusterqueue": ("cq", "clusterqueues"),
    "localqueue": ("lq", "localqueues"),
    "workload": ("kwl", "kueueworkload", "kueueworkloads", "workloads"),
    "resourceflavor": ("rf", "resourceflavors"),
}
PASSTHROUGH = ("get", "describe", "edit", "patch", "delete")
LISTS: dict[str, Command] = {
    "clusterqueue": list_cluster_queues,
    "localqueue": list_local_queues,
    "workload": list_workloads,
    "resourceflavor": list_resource_flavors,
}


def _connection(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: a flag given before the verb is not reset by the subcommand's default.
    parser.add_argument("--kubeconfig", default=argparse.SUPPRESS)
    parser.add_argument("--context", default=argparse.SUPPRESS)
    parser.add_argument("-n", "--namespace", default=argparse.SUPPRESS)


def _kind(sub: argparse._SubParsersAction, kind: str) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    parser: argparse.ArgumentParser = sub.add_parser(kind, aliases=KINDS[kind])
    parser.set_defaults(kind=kind)
    _connection(parser)
    return parser


def _list_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    verb = sub.add_parser("list", help="list kq's objects as kueuectl shows them")
    kinds = verb.add_subparsers(dest="kind", required=True)
    for kind in LISTS:
        parser = _kind(kinds, kind)
        parser.set_defaults(run=LISTS[kind])
        parser.add_argument("-l", "--selector")
        parser.add_argument("--field-selector")
        parser.add_argument("--no-headers", action="store_true")
        if kind in ("localqueue", "workload"):
            parser.add_argument("-A", "--all-namespaces", action="store_true")
        if kind != "resourceflavor":
            parser.add_argument("-c", "--clusterqueue", default="")
        if kind == "clusterqueue":
            parser.add_argument("--active", type=_bool, default=None)
        if kind == "workload":
            parser.add_argument("-q", "--localqueue", default="")
            parser.add_argument("--status", action="append", type=_status)
    pods: argparse.ArgumentParser = kinds.add_parser("pods", aliases=("po",))
    pods.set_defaults(kind="pods", run=list_pods)
    _connection(pods)
    pods.add_argument("--for", dest="for_object", required=True, metavar="TYPE[.API-GROUP]/NAME")
    pods.add_argument("-l", "--selector")
    pods.add_argument("--field-selector")
    pods.add_argument("--no-headers", action="store_true")
    for parser in (*(kinds.choices[k] for k in LISTS), pods):
        parser.add_argument("-o", "--output", choices=FORMATS, default="")


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError("must be true or false")
    return text.lower() == "true"


def _status(text: str) -> str:
    if text.lower() not in STATUSES:
        raise argparse.ArgumentTypeError(
            f'invalid status value ({text}). Must be "all", "pending", "admitted" or "finished"'
        )
    return text


def _create_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    verb = sub.add_parser("create", help="create a ClusterQueue, LocalQueue or ResourceFlavor")
    kinds = verb.add_subparsers(dest="kind", required=True)
    for kind in ("clusterqueue", "localqueue", "resourceflavor"):
        parser = _kind(kinds, kind)
        parser.set_defaults(run=create)
        parser.add_argument("name")
        parser.add_argument("--dry-run", choices=("none", "client", "server"), default="none")
    cq = kinds.choices["clusterqueue"]
    cq.add_argument("--cohort", default="")
    cq.add_argument("--queuing-strategy", choices=("StrictFIFO", "BestEffortFIFO"))
    cq.add_argument("--namespace-selector")
    cq.add_argument("--reclaim-within-cohort", choices=("Never", "LowerPriority", "Any"))
    cq.add_argument("--preemption-within-cluster-queue", choices=("Never", "LowerPriority",
                    "LowerOrNewerEqualPriority"))  # fmt: skip
    for flag in ("--nominal-quota", "--borrowing-limit", "--lending-limit"):
        cq.add_argument(flag, action="append", default=[])
    lq = kinds.choices["localqueue"]
    lq.add_argument("-c", "--clusterqueue", default="")
    lq.add_argument("-i", "--ignore-unknown-cq", action="store_true")
    rf = kinds.choices["resourceflavor"]
    rf.add_argument("--node-labels", default="")
    rf.add_argument("--node-taints", action="append", default=[])


def _control_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    for name in ("stop", "resume"):
        verb = sub.add_parser(name, help=f"{name} a Workload, LocalQueue or ClusterQueue")
        verb.set_defaults(verb=name)
        kinds = verb.add_subparsers(dest="kind", required=True)
        for kind in ("workload", "localqueue", "clusterqueue"):
            parser = _kind(kinds, kind)
            parser.set_defaults(run=stop_or_resume)
            parser.add_argument("name")
            parser.add_argument("--dry-run", choices=("none", "client", "server"), default="none")
            if name == "stop" and kind != "workload":
                parser.add_argument("--keep-already-running", action="store_true")


def _explain_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    verb = sub.add_parser("explain", help="why a workload waits, or why it got its flavor")
    kinds = verb.add_subparsers(dest="kind", required=True)
    parser = _kind(kinds, "workload")
    parser.set_defaults(run=explain_workload)
    parser.add_argument("name")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="kubectl kq",
        description="kq's kubectl plugin, with kueuectl's commands; also "
        + "|".join(PASSTHROUGH)
        + " KIND, passed to kubectl",
    )
    _connection(top)
    sub = top.add_subparsers(dest="command", required=True)
    _list_parser(sub)
    _create_parser(sub)
    _control_parsers(sub)
    _explain_parser(sub)
    return top


def passthrough(argv: Sequence[str]) -> None:
    """kueuectl's pass-through: kubectl itself, with the kind named in full."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("kubectl kq: pass-through commands need kubectl on PATH")
    args = list(argv)
    for index, arg in enumerate(args[1:], start=1):
        if arg.startswith("-"):
            continue
        for kind, aliases in KINDS.items():
            if arg == kind or arg in aliases:
                args[index] = f"{kind}s.kueue.x-k8s.io"
        break
    os.execv(kubectl, [kubectl, *args])


async def _run(args: argparse.Namespace) -> str:
    path = connect.kubeconfig_path(getattr(args, "kubeconfig", None))
    context = getattr(args, "context", None)
    if getattr(args, "namespace", None) is None:
        args.namespace = connect.default_namespace(path, context)
    async with await connect.connect(path, context) as client:
        output: str = await args.run(client, args)
        return output


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSTHROUGH:
        passthrough(argv)
    args = parser().parse_args(argv)
    try:
        out = asyncio.run(_run(args))
    except (UsageError, ApiError, ConfigException, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if out:
        sys.stdout.write(out)
    elif args.command == "list":
        namespace = "" if getattr(args, "all_namespaces", True) else f" in {args.namespace}"
        print(f"No resources found{namespace} namespace." if namespace else "No resources found",
              file=sys.stderr)  # fmt: skip
    return 0
