"""``kq run``: the controller process from start-up to a bounded, clean shutdown.

Every replica keeps its informers warm and serves probes; only the elected leader runs the
leader-only runnables. SIGTERM or SIGINT cancels the one task group that owns everything; the
lease is released on the way out so a successor takes over at once. Losing the lease ends the
process with exit code 1, after leader-only work was cancelled.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog
from aiohttp import web

from kq import heap
from kq.config import KqConfig
from kq.config_file import load_config
from kq.observability import metrics
from kq.observability.logs import configure_logging
from kq.observability.metric_options import set_role
from kq.observability.metrics import FOLLOWER, LEADER, STANDALONE
from kq.observability.tracing import configure_tracing
from kq.runtime import health, metrics_server
from kq.runtime.certs import inject_ca_bundle, provision_from_secret, service_dns_names
from kq.runtime.client import ClientSettings, KubeClient
from kq.runtime.leader import ElectionSettings, LeaderElector, LeadershipLost
from kq.runtime.manager import Manager
from kq.runtime.resources import KUEUE_KINDS, NAMESPACES
from kq.runtime.webhook import WebhookServer

log = structlog.get_logger("kq.runtime.process")


SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Stop(Exception):
    """A signal asked the process to stop."""


WEBHOOK_SERVICE = "kueue-webhook-service"
METRICS_SERVICE = "kueue-controller-manager-metrics-service"
WEBHOOK_SECRET = "kueue-webhook-server-cert"
WEBHOOK_CONFIGURATIONS = (
    "kueue-validating-webhook-configuration",
    "kueue-mutating-webhook-configuration",
)


def build_manager(client: KubeClient, config: KqConfig) -> Manager:
    """The informers every replica runs; controllers register on the returned manager."""
    names = service_dns_names(WEBHOOK_SERVICE, config.namespace)

    async def publish_ca(ca_pem: bytes) -> None:
        await inject_ca_bundle(client, ca_pem, WEBHOOK_CONFIGURATIONS)

    cert_dir = Path(config.webhook.cert_dir)

    async def provision() -> None:
        await provision_from_secret(client, config.namespace, WEBHOOK_SECRET, cert_dir, names)

    webhook = WebhookServer(
        config.webhook.port,
        cert_dir,
        host=config.webhook.host or None,
        provision=provision,
        publish_ca=publish_ca,
    )
    manager = Manager(client, webhook)
    for resource in (*KUEUE_KINDS, NAMESPACES):
        manager.informer(resource)
    return manager


Setup = Callable[[Manager, KqConfig], Awaitable[None]]
"""Attaches controllers to the manager (informer handlers, runnables, webhook paths).

The runtime knows no controller by name; ``kq run`` passes the one that installs kq's.
"""


async def run(config: KqConfig, kubeconfig: Path | None, setup: Setup | None = None) -> int:
    """Run until a signal (exit 0) or lost leadership (exit 1)."""
    connection = config.client_connection
    settings = ClientSettings(qps=connection.qps, burst=connection.burst)
    client = await KubeClient.connect(kubeconfig, settings)
    manager = build_manager(client, config)
    if setup is not None:
        await setup(manager, config)
    app = health.build_app(config.health, manager.not_synced)
    runner = await health.serve(app, [config.health.health_probe_bind_address])
    scrape = await _serve_metrics(config, client)
    addresses = [config.health.health_probe_bind_address, config.metrics_bind_address]
    log.info("kq started", addresses=addresses, informers=len(manager.informers))
    code = 0
    try:
        await _supervise(config, manager)
    except* _Stop:
        log.info("stopping on signal")
    except* LeadershipLost:
        code = 1
    finally:
        await runner.cleanup()
        if scrape is not None:
            await scrape.cleanup()
        await client.close()
    return code


async def _serve_metrics(config: KqConfig, client: KubeClient) -> web.AppRunner | None:
    address = config.metrics_bind_address
    if not address:
        return None
    if not config.metrics_secure_serving:
        return await health.serve(metrics_server.build_app(None), [address])
    names = [*service_dns_names(METRICS_SERVICE, config.namespace), "localhost"]
    app = metrics_server.build_app(metrics_server.Gate(client).check)
    return await health.serve(app, [address], metrics_server.self_signed_context(names))


async def _supervise(config: KqConfig, manager: Manager) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    try:
        await _run_all(config, manager, stop)
    finally:
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)


async def _run_all(config: KqConfig, manager: Manager, stop: asyncio.Event) -> None:
    async def stopper() -> None:
        await stop.wait()
        raise _Stop

    async with asyncio.TaskGroup() as group:
        group.create_task(stopper(), name="signals")
        for informer in manager.informers:
            group.create_task(informer.run(), name=f"informer/{informer.resource.kind}")
        for runnable in manager.runnables:
            if not runnable.leader_only:
                group.create_task(runnable.start(), name=runnable.name)
        if manager.webhook.paths:
            group.create_task(manager.webhook.run(), name="webhook-server")
        group.create_task(_lead(config, manager), name="leader-election")
        group.create_task(_settle_heap(manager), name="heap")


async def _settle_heap(manager: Manager) -> None:
    # The caches are the bulk of the heap once every informer has listed.
    await asyncio.gather(*(informer.wait_synced() for informer in manager.informers))
    heap.settle()


async def _lead(config: KqConfig, manager: Manager) -> None:
    election = config.leader_election
    gauge = metrics.leader_election_master_status.labels(election.resource_name)

    async def leading() -> None:
        gauge.set(1)
        if election.leader_elect:
            set_role(LEADER)
        try:
            async with asyncio.TaskGroup() as group:
                for runnable in manager.runnables:
                    if runnable.leader_only:
                        group.create_task(runnable.start(), name=runnable.name)
            await asyncio.Event().wait()  # leadership is held until cancelled or lost
        finally:
            gauge.set(0)
            if election.leader_elect:
                set_role(FOLLOWER)

    if not election.leader_elect:
        set_role(STANDALONE)
        await leading()
        return
    set_role(FOLLOWER)
    settings = ElectionSettings(
        name=election.resource_name,
        namespace=config.lease_namespace,
        lease_duration=election.lease_duration,
        renew_deadline=election.renew_deadline,
        retry_period=election.retry_period,
    )
    elector = LeaderElector(manager.client, settings)
    manager.follow(elector.leading)
    await elector.run(leading)


def main(args: argparse.Namespace, setup: Setup | None = None) -> int:
    """``kq run``: validate the configuration first, so a bad file fails before any I/O."""
    config = load_config(args.config)
    configure_logging(getattr(args, "log_level", "info"))
    provider = configure_tracing()
    try:
        return asyncio.run(run(config, args.kubeconfig, setup))
    finally:
        if provider is not None:
            provider.shutdown()
