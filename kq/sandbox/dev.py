"""``kq dev``: the embedded API server, a simulated cluster and the kq controller in one process.

State lives in the data directory (``.kq/dev``) and survives restarts unless ``--fresh``.
``kq dev node|pool fail|recover`` inject node failures into a running sandbox through its API;
``kq dev provreq fail|revoke|expire`` do the same to a ProvisioningRequest.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import signal
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from kq.app import install_controllers
from kq.config import Health, KqConfig, Webhook
from kq.observability.logs import configure_logging
from kq.runtime import process
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import NAMESPACES
from kq.sandbox.cluster.clock import SandboxClock, parse_rfc3339
from kq.sandbox.cluster.driver import NODES, run_simulated_cluster, set_failure
from kq.sandbox.cluster.podinfo import condition
from kq.sandbox.cluster.profiles import BUILTIN, Profile, ProfileError, load_profile
from kq.sandbox.cluster.provreq_faults import FAULTS, inject
from kq.sandbox.webhooks import free_loopback_port, register_webhooks, wait_for_ca

DEFAULT_DATA_DIR = Path(".kq/dev")
_STORY = {
    "s1": "examples/s1/jobsets-multislice-standard.yaml",
    "s2": "examples/s2/hotswap.yaml",
    "s3": "examples/s3/job.yaml",
    "s4": "examples/s4/jobs/",
}


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``kq dev``'s options and its ``node``/``pool`` failure commands."""
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="state directory")
    parser.add_argument("--port", type=int, default=0, help="API server port (0: any free port)")
    parser.add_argument("--profile", default="s1", help="cluster profile name or YAML file")
    parser.add_argument("--speed", type=float, default=1.0, help="time acceleration factor")
    parser.add_argument("--fresh", action="store_true", help="discard state from earlier runs")
    parser.add_argument("--no-controller", action="store_true", help="do not start kq itself")
    parser.set_defaults(func=run)
    actions = parser.add_subparsers(dest="dev_command", metavar="{node,pool,provreq}")
    for what in ("node", "pool"):
        sub = actions.add_parser(what, help=f"fail or recover a {what} of a running sandbox")
        sub.add_argument("action", choices=("fail", "recover"))
        sub.add_argument("name", help="node name" if what == "node" else "node pool name")
        # SUPPRESS keeps the parent's default when the option is not repeated here.
        sub.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS, help="state directory")
        sub.add_argument(
            "--mode", choices=("Unreachable", "NotReady"), default="Unreachable",
            help="how the node fails: its kubelet stops, or reports not ready",
        )  # fmt: skip
        sub.set_defaults(func=run_failure)
    sub = actions.add_parser(
        "provreq", help="make a ProvisioningRequest fail, lose its capacity or end its booking"
    )
    sub.add_argument("action", choices=tuple(FAULTS))
    sub.add_argument("name", help="ProvisioningRequest name")
    sub.add_argument("-n", "--namespace", default="default")
    sub.add_argument("--message", default=None, help="the condition's message")
    sub.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS, help="state directory")
    sub.set_defaults(func=run_provreq_fault)


def run(args: argparse.Namespace) -> int:
    if args.speed <= 0:
        print("kq dev: --speed must be positive", file=sys.stderr)
        return 2
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        print(f"kq dev: {exc}", file=sys.stderr)
        return 2
    if args.fresh and args.data_dir.exists():
        shutil.rmtree(args.data_dir)
    configure_logging()  # logs go to stderr: stdout is the ready line and the instructions
    return asyncio.run(_serve(args, profile))


def run_failure(args: argparse.Namespace) -> int:
    return asyncio.run(_failure(args))


async def _failure(args: argparse.Namespace) -> int:
    kubeconfig = Path(args.data_dir) / "kubeconfig"
    if not kubeconfig.is_file():
        print(f"kq dev: no sandbox in {args.data_dir} (start `kq dev` first)", file=sys.stderr)
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
    kubeconfig = Path(args.data_dir) / "kubeconfig"
    if not kubeconfig.is_file():
        print(f"kq dev: no sandbox in {args.data_dir} (start `kq dev` first)", file=sys.stderr)
        return 2
    async with await KubeClient.connect(kubeconfig) as client:
        try:
            written = await inject(client, args.namespace, args.name, args.action, args.message)
        except ApiError as exc:
            print(f"kq dev: {exc}", file=sys.stderr)
            return 1
    print(f"{args.namespace}/{args.name}: {written['type']}=True ({written['reason']})")
    return 0


async def _sandbox_origin(client: KubeClient) -> datetime:
    """Where sandbox time resumes: never before the last heartbeat an earlier run wrote."""
    beats = [datetime.now(UTC)]
    for node in (await client.list(NODES)).get("items") or ():
        beat = (condition(node, "Ready") or {}).get("lastHeartbeatTime")
        if beat:
            beats.append(parse_rfc3339(str(beat)))
    return max(beats)


SANDBOX_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "ray.io/rayjob", "kubeflow.org/mpijob")


def _controller_config(webhook_port: int, cert_dir: Path) -> KqConfig:
    """kq's defaults, every job integration on (the stories use JobSets and MPIJobs), the
    webhooks on a loopback port, and probes and metrics on free local ports."""
    return KqConfig(
        frameworks=SANDBOX_FRAMEWORKS,
        webhook=Webhook(port=webhook_port, cert_dir=str(cert_dir), host="127.0.0.1"),
        metrics_bind_address="127.0.0.1:0",
        metrics_secure_serving=False,  # loopback, and the embedded server reviews no tokens
        health=replace(Health(), health_probe_bind_address="127.0.0.1:0"),
    )


async def _ensure_namespace(client: KubeClient, name: str) -> None:
    try:
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": name}})  # fmt: skip
    except ApiError as exc:
        if not exc.conflict:
            raise


def _instructions(kubeconfig: Path, args: argparse.Namespace, profile: Profile) -> list[str]:
    data_dir = "" if args.data_dir == DEFAULT_DATA_DIR else f" --data-dir {args.data_dir}"
    story = _STORY.get(args.profile) if args.profile in BUILTIN else None
    lines = [f"  export KUBECONFIG={kubeconfig}", "  kubectl get nodes"]
    if story:
        lines.append(f"  kubectl apply -f {story}")
    lines.append("  kubectl get jobsets,jobs,pods")
    pools = [p.name for p in profile.pools if p.count and not p.queued_provisioning]
    if pools:
        lines.append(f"  kq dev pool fail {pools[-1]}{data_dir}")
    return lines


async def _serve(args: argparse.Namespace, profile: Profile) -> int:
    from kq.crds import builtin_crds
    from kq.sandbox.apiserver.server import Options, start

    try:
        running = await start(Options(data_dir=args.data_dir, port=args.port), builtin_crds())
    except OSError as exc:
        print(f"kq dev: cannot serve the API on port {args.port}: {exc}", file=sys.stderr)
        return 1
    kubeconfig = running.kubeconfig.resolve()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    client = await KubeClient.connect(kubeconfig)
    tasks: list[asyncio.Task[object]] = []
    code = 0
    try:
        clock = SandboxClock(args.speed, origin=await _sandbox_origin(client))
        ready = asyncio.Event()
        sandbox = asyncio.create_task(run_simulated_cluster(client, profile, clock, ready=ready))
        tasks.append(sandbox)
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait({sandbox, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if sandbox.done():
            sandbox.result()  # the simulated cluster could not start: raise its error
        if args.no_controller:
            controller_note = "kq controller: not started (--no-controller)"
        else:
            port = free_loopback_port()
            config = _controller_config(port, args.data_dir / "certs")
            await _ensure_namespace(client, config.lease_namespace)  # where its Lease lives
            await register_webhooks(client, port)
            controller = asyncio.create_task(process.run(config, kubeconfig, install_controllers))
            tasks.append(controller)
            published = asyncio.create_task(wait_for_ca(client))
            await asyncio.wait({controller, published}, return_when=asyncio.FIRST_COMPLETED)
            if controller.done():
                published.cancel()
                return controller.result()
            published.result()
            controller_note = f"kq controller: running in this process, webhooks on port {port}"
        nodes = len((await client.list(NODES)).get("items") or ())
        print(f"kq dev ready: profile {profile.name}, {nodes} nodes, speed {args.speed:g}x, "
              f"API {running.url}, kubeconfig {kubeconfig}", flush=True)  # fmt: skip
        print(controller_note)
        print("Try:", *_instructions(kubeconfig, args, profile), sep="\n", flush=True)
        stopping = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({stopping, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        for task in done - {stopping}:
            # The controller handles the signals itself when it runs, and returns 0 on them.
            result = task.result()
            code = result if isinstance(result, int) else 1
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await client.close()
        await running.stop()
    print("kq dev stopped", file=sys.stderr)
    return code
