"""``kq dev``: the embedded API server, a simulated cluster and the kq controller in one process.

State lives in the data directory (``.kq/dev``) and survives restarts unless ``--fresh``.
``--kubeconfig`` runs the simulated cluster and kq against an existing API server instead
(``kq.sandbox.remote``): the state lives there, so ``--fresh`` is refused and the data
directory only keeps the webhook's certificates.
``kq dev node|pool fail|recover`` and ``kq dev provreq fail|revoke|expire`` inject faults into a
running sandbox (``kq.sandbox.dev_faults``).
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
from kq.config import Health, KqConfig, VisibilityServer, Webhook
from kq.dashboard.server import Dashboard
from kq.observability.logs import add_log_level_option, configure_logging
from kq.observability.tracing import TracingConfigError, configure_tracing
from kq.runtime import process
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import NAMESPACES
from kq.sandbox.cluster.clock import SandboxClock, parse_rfc3339
from kq.sandbox.cluster.driver import NODES, Settings, run_simulated_cluster
from kq.sandbox.cluster.podinfo import condition
from kq.sandbox.cluster.profiles import BUILTIN, Profile, ProfileError, load_profile
from kq.sandbox.cluster.provreq_faults import FAULTS
from kq.sandbox.dev_faults import run_failure, run_provreq_fault
from kq.sandbox.remote import (
    PROBE_NAMESPACE,
    install_missing_crds,
    server_url,
    unregister_webhooks,
    wait_for_webhooks_called,
)
from kq.sandbox.remote_conversion import convert_on_loopback
from kq.sandbox.visibility import register_visibility
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
    add_log_level_option(parser)
    parser.add_argument("--dashboard-port", type=int, default=0,
                        help="the web dashboard's loopback port (0: any free port)")  # fmt: skip
    parser.add_argument("--no-dashboard", action="store_true", help="do not serve the dashboard")
    parser.add_argument(
        "--kubeconfig", type=Path, default=None,
        help="run against this (bare) API server instead of serving one",
    )  # fmt: skip
    parser.set_defaults(func=run)
    actions = parser.add_subparsers(dest="dev_command", metavar="{node,pool,provreq}")
    for what in ("node", "pool"):
        sub = actions.add_parser(what, help=f"fail or recover a {what} of a running sandbox")
        sub.add_argument("action", choices=("fail", "recover"))
        sub.add_argument("name", help="node name" if what == "node" else "node pool name")
        # SUPPRESS keeps the parent's default when the option is not repeated here.
        _locate_options(sub)
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
    _locate_options(sub)
    sub.set_defaults(func=run_provreq_fault)


def _locate_options(sub: argparse.ArgumentParser) -> None:
    """How a failure command finds the sandbox; SUPPRESS keeps the parent's value when unset."""
    sub.add_argument("--data-dir", type=Path, default=argparse.SUPPRESS, help="state directory")
    sub.add_argument("--kubeconfig", type=Path, default=argparse.SUPPRESS,
                     help="the API server of a `kq dev --kubeconfig`")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    if args.speed <= 0:
        print("kq dev: --speed must be positive", file=sys.stderr)
        return 2
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        print(f"kq dev: {exc}", file=sys.stderr)
        return 2
    if not 0 <= args.dashboard_port <= 65535:
        print("kq dev: --dashboard-port must be from 0 to 65535", file=sys.stderr)
        return 2
    if args.kubeconfig is not None and (args.fresh or args.port):
        print(
            "kq dev: with --kubeconfig the state lives in that API server, which kq dev does "
            "not serve: no --fresh (delete objects there) and no --port",
            file=sys.stderr,
        )
        return 2
    if args.kubeconfig is not None:
        args.kubeconfig = args.kubeconfig.resolve()  # printed in the ready line for others
    if args.fresh and args.data_dir.exists():
        shutil.rmtree(args.data_dir)
    # Logs go to stderr: stdout is the ready line and the instructions.
    configure_logging(args.log_level)
    try:
        # Spans are kept where a user looks (explain, the dashboard), and exported to a
        # collector when OTEL_EXPORTER_OTLP_ENDPOINT names one.
        provider = configure_tracing(keep_recent=True)
    except TracingConfigError as exc:
        print(f"kq dev: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_serve(args, profile))
    finally:
        if provider is not None:
            provider.shutdown()


async def _sandbox_origin(client: KubeClient) -> datetime:
    """Where sandbox time resumes: never before the last heartbeat an earlier run wrote."""
    beats = [datetime.now(UTC)]
    for node in (await client.list(NODES)).get("items") or ():
        beat = (condition(node, "Ready") or {}).get("lastHeartbeatTime")
        if beat:
            beats.append(parse_rfc3339(str(beat)))
    return max(beats)


SANDBOX_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "ray.io/rayjob", "kubeflow.org/mpijob")
DEV_FRAMEWORKS = (
    *SANDBOX_FRAMEWORKS,
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)
"""What ``kq dev`` runs: the stories' job kinds and the serving kinds (examples/serving)."""


def _controller_config(webhook_port: int, cert_dir: Path, visibility_port: int = 0) -> KqConfig:
    """kq's defaults, every job integration on (the stories use JobSets and MPIJobs), the
    webhooks and the visibility API on loopback ports, and probes and metrics on free local
    ports."""
    return KqConfig(
        frameworks=DEV_FRAMEWORKS,
        webhook=Webhook(port=webhook_port, cert_dir=str(cert_dir), host="127.0.0.1"),
        visibility_server=VisibilityServer("127.0.0.1", visibility_port),
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
    if args.kubeconfig is not None:
        data_dir = f" --kubeconfig {kubeconfig}"
    story = _STORY.get(args.profile) if args.profile in BUILTIN else None
    lines = [f"  export KUBECONFIG={kubeconfig}", "  kubectl get nodes"]
    if story:
        lines.append(f"  kubectl apply -f {story}")
    lines.append("  kubectl get jobsets,jobs,pods")
    pools = [p.name for p in profile.pools if p.count and not p.queued_provisioning]
    if pools:
        lines.append(f"  kq dev pool fail {pools[-1]}{data_dir}")
    return lines


class _CannotServe(Exception):
    """The embedded API server could not start; the message says why."""


async def _api_server(
    args: argparse.Namespace, stack: contextlib.AsyncExitStack
) -> tuple[Path, str]:
    """(kubeconfig, URL) of the server to run on: the embedded one, started here and stopped
    when ``stack`` closes, or the one ``--kubeconfig`` names."""
    if args.kubeconfig is not None:
        return args.kubeconfig, await server_url(args.kubeconfig)
    from kq.crds import builtin_crds
    from kq.sandbox.apiserver.server import Options, start

    try:
        running = await start(Options(data_dir=args.data_dir, port=args.port), builtin_crds())
    except OSError as exc:
        raise _CannotServe(f"cannot serve the API on port {args.port}: {exc}") from exc
    stack.push_async_callback(running.stop)
    return running.kubeconfig.resolve(), running.url


async def _serve(args: argparse.Namespace, profile: Profile) -> int:
    async with contextlib.AsyncExitStack() as stack:
        try:
            kubeconfig, url = await _api_server(args, stack)
            client = await KubeClient.connect(kubeconfig)
            stack.push_async_callback(client.close)
            if args.kubeconfig is not None:
                await install_missing_crds(client)
        except (_CannotServe, ApiError, OSError) as exc:
            print(f"kq dev: {exc}", file=sys.stderr)
            return 1
        tasks: list[asyncio.Task[object]] = []
        stack.push_async_callback(_cancel, tasks)
        code = await _run(args, profile, client, (kubeconfig, url), tasks, stack)
    print("kq dev stopped", file=sys.stderr)
    return code


async def _cancel(tasks: list[asyncio.Task[object]]) -> None:
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _run(
    args: argparse.Namespace,
    profile: Profile,
    client: KubeClient,
    server: tuple[Path, str],
    tasks: list[asyncio.Task[object]],
    stack: contextlib.AsyncExitStack,
) -> int:
    """Start the simulated cluster and kq, print the ready line, run until a signal."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await _start_sandbox(args, profile, client, tasks)
    if args.no_controller:
        controller_note: str | int = "kq controller: not started (--no-controller)"
    else:
        controller_note = await _start_controller(args, client, server[0], tasks, stack)
    if isinstance(controller_note, int):
        return controller_note
    dashboard = await _start_dashboard(args, client, tasks)
    if isinstance(dashboard, int):
        return dashboard
    kubeconfig, url = server
    nodes = len((await client.list(NODES)).get("items") or ())
    print(f"kq dev ready: profile {profile.name}, {nodes} nodes, speed {args.speed:g}x, "
          f"API {url}, kubeconfig {kubeconfig}", flush=True)  # fmt: skip
    print(dashboard)
    print(controller_note)
    print("Try:", *_instructions(kubeconfig, args, profile), sep="\n", flush=True)
    stopping = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({stopping, *tasks}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    code = 0
    for task in done - {stopping}:
        # The controller handles the signals itself when it runs, and returns 0 on them.
        result = task.result()
        code = result if isinstance(result, int) else 1
    return code


async def _start_dashboard(
    args: argparse.Namespace, client: KubeClient, tasks: list[asyncio.Task[object]]
) -> str | int:
    """The dashboard on loopback, reading through this process's client; its line for
    stdout, or exit code 1 if its port is taken."""
    if args.no_dashboard:
        return "kq dashboard: not started (--no-dashboard)"
    dashboard = Dashboard(client, "127.0.0.1", args.dashboard_port)
    serving = asyncio.create_task(dashboard.run())
    listening = asyncio.create_task(dashboard.listening.wait())
    await asyncio.wait({serving, listening}, return_when=asyncio.FIRST_COMPLETED)
    listening.cancel()
    if serving.done():
        print(f"kq dev: dashboard: {serving.exception()}", file=sys.stderr)
        return 1
    tasks.append(serving)
    return f"kq dashboard: {dashboard.url}"


async def _start_sandbox(
    args: argparse.Namespace,
    profile: Profile,
    client: KubeClient,
    tasks: list[asyncio.Task[object]],
) -> None:
    """The simulated cluster, started; returns once its caches are synced and its nodes exist."""
    clock = SandboxClock(args.speed, origin=await _sandbox_origin(client))
    ready = asyncio.Event()
    # A bare API server has no garbage collector; the embedded one collects its own.
    settings = Settings(collect_garbage=args.kubeconfig is not None)
    sandbox = asyncio.create_task(
        run_simulated_cluster(client, profile, clock, ready=ready, settings=settings)
    )
    tasks.append(sandbox)
    waiting = asyncio.create_task(ready.wait())
    await asyncio.wait({sandbox, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if sandbox.done():
        sandbox.result()  # the simulated cluster could not start: raise its error


async def _start_controller(
    args: argparse.Namespace,
    client: KubeClient,
    kubeconfig: Path,
    tasks: list[asyncio.Task[object]],
    stack: contextlib.AsyncExitStack,
) -> str | int:
    """kq in this process with its webhooks registered and called; a note, or its exit code
    if it ended before it served."""
    port = free_loopback_port()
    config = _controller_config(port, args.data_dir / "certs", free_loopback_port())
    await _ensure_namespace(client, config.lease_namespace)  # where its Lease lives
    await _ensure_namespace(client, PROBE_NAMESPACE)
    await register_webhooks(client, port)
    await register_visibility(client, config.namespace, config.visibility_server.bind_port)
    if args.kubeconfig is not None:
        stack.push_async_callback(_unregister_webhooks, client)
        await convert_on_loopback(client, port, stack)
    controller = asyncio.create_task(process.run(config, kubeconfig, install_controllers))
    tasks.append(controller)
    published = asyncio.create_task(_webhooks_serving(client))
    await asyncio.wait({controller, published}, return_when=asyncio.FIRST_COMPLETED)
    if controller.done():
        published.cancel()
        return controller.result()
    published.result()
    return f"kq controller: running in this process, webhooks on port {port}"


async def _webhooks_serving(client: KubeClient) -> None:
    await wait_for_ca(client)
    await wait_for_webhooks_called(client)


async def _unregister_webhooks(client: KubeClient) -> None:
    try:
        await unregister_webhooks(client)
    except ApiError as exc:
        print(f"kq dev: could not remove its webhook configurations: {exc}", file=sys.stderr)
