"""kq's controllers installed on the runtime's manager: what ``kq run`` and ``kq dev`` start.

The runtime knows no controller by name, and the controllers know no process; this module
is the one place that puts them together.
"""

from __future__ import annotations

import argparse
import sys

import pluggy
import structlog

from kq.admissionchecks.runner import register_admission_checks
from kq.config import KqConfig
from kq.controllers.metrics import register_metrics
from kq.controllers.plugin_controllers import register_plugin_controllers
from kq.controllers.priority_classes import register_priority_classes
from kq.controllers.registration import register_admission
from kq.controllers.visible import VisibleQueues
from kq.controllers.workloads import WORKLOAD_GROUP_KIND, register_workload_lifecycle
from kq.dashboard.server import Dashboard, parse_address
from kq.jobframework.controller import register_job_integrations
from kq.jobframework.registry import job_integrations
from kq.plugins import build_plugin_manager
from kq.runtime import process
from kq.runtime.certs import inject_conversion_ca_bundle
from kq.runtime.identity import whoami
from kq.runtime.manager import Manager
from kq.runtime.webhook import CONVERSION
from kq.visibility.server import VisibilityServer
from kq.webhooks import JobWebhooks, kueue_validator
from kq.webhooks.conversion import CONVERT, CONVERTED_CRDS, respond
from kq.webhooks.routes import for_server, routes


async def install_controllers(manager: Manager, config: KqConfig) -> None:
    """Admission (quota reservation, preemption, queue status), the workload lifecycle
    (admission checks, deactivation, back-off), WorkloadPriorityClass values into Workloads,
    check controllers, plugin controllers, job integrations, the admission and conversion
    webhooks, and the visibility API."""
    pm = build_plugin_manager(config.plugins)
    pm.hook.kq_configure.call_historic(kwargs={"config": config})
    register_metrics(manager, config)
    # Plugin controllers before admission: started first, they read their caches before its
    # first cycle asks their vetoes (the veto answers "not yet" rather than guess meanwhile).
    await register_plugin_controllers(manager, pm, lambda: visible.retry_vetoed())
    visible = register_admission(manager, config, pm)
    _serve_visibility(manager, config, visible)
    register_workload_lifecycle(manager, config)
    register_priority_classes(manager)
    await register_admission_checks(manager, pm, config.namespace)
    jobs = await register_job_integrations(manager, pm, config)
    hooks = JobWebhooks(jobs.integrations, jobs.facts.webhook_facts)
    kueue = kueue_validator(
        await _admission_writers(manager),
        config.fair_sharing.enable,
        config.admission_fair_sharing is not None,
        config.feature_gates.get("PriorityBoost", False),
    )
    for path, handler in routes(hooks, kueue).items():
        manager.webhook.register(path, for_server(handler))
    _serve_conversion(manager)
    _warn_unread_concurrency(config, pm)


def _serve_visibility(manager: Manager, config: KqConfig, visible: VisibleQueues) -> None:
    """Every replica serves it (see ``kq.controllers.visible``), with the webhook's
    certificate once the webhook server has loaded it."""
    settings = config.visibility_server
    if not settings.bind_port:
        return
    server = VisibilityServer(
        manager.client,
        visible.queues,
        visible.raw,
        manager.webhook.cert_dir,
        settings.bind_address,
        settings.bind_port,
        manager.webhook.listening,
        visible.scheduler,
    )
    manager.add("visibility-server", server.run, leader_only=False)


def _serve_conversion(manager: Manager) -> None:
    """The conversion webhook of Kueue's kinds, and its CA into the CRDs that call it."""
    manager.webhook.register(CONVERT, respond, CONVERSION)

    async def publish_ca(ca_pem: bytes) -> None:
        port = manager.webhook.port
        await inject_conversion_ca_bundle(manager.client, ca_pem, CONVERTED_CRDS, port)

    manager.webhook.add_ca_publisher(publish_ca)


async def _admission_writers(manager: Manager) -> frozenset[str] | None:
    """kq's own identity: the webhook refuses ``status.admission`` changes by anyone else."""
    me = await whoami(manager.client)
    if me is None:
        structlog.get_logger(__name__).warning(
            "the API server names no users: status.admission writes are not limited to kq"
        )
        return None
    return frozenset({me})


def _warn_unread_concurrency(config: KqConfig, pm: pluggy.PluginManager) -> None:
    """Kueue reconciles queues and flavors in controllers of their own; kq writes their status
    from the admission loop, so their ``groupKindConcurrency`` has nothing to size."""
    read = {WORKLOAD_GROUP_KIND} | {j.GVK.group_kind for j in job_integrations(pm).values()}
    for group_kind in sorted(set(config.group_kind_concurrency) - read):
        structlog.get_logger(__name__).warning(
            "controller.groupKindConcurrency names a kind kq has no worker pool for; "
            "the value is not used",
            group_kind=group_kind,
        )


def run_command(args: argparse.Namespace) -> int:
    """``kq run``; with ``--dashboard-address``, the dashboard too, on every replica."""
    address = getattr(args, "dashboard_address", "")
    if not address:
        return process.main(args, install_controllers)
    try:
        host, port = parse_address(address)
    except ValueError as exc:
        print(f"kq run: --dashboard-address: {exc}", file=sys.stderr)
        return 2

    async def setup(manager: Manager, config: KqConfig) -> None:
        await install_controllers(manager, config)
        dashboard = Dashboard(manager.client, host, port)
        manager.add("dashboard", dashboard.run_logged, leader_only=False)

    return process.main(args, setup)
