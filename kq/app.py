"""kq's controllers installed on the runtime's manager: what ``kq run`` and ``kq dev`` start.

The runtime knows no controller by name, and the controllers know no process; this module
is the one place that puts them together.
"""

from __future__ import annotations

import argparse

from kq.admissionchecks.runner import register_admission_checks
from kq.config import KqConfig
from kq.controllers.priority_classes import register_priority_classes
from kq.controllers.registration import register_admission
from kq.controllers.workloads import register_workload_lifecycle
from kq.jobframework.controller import register_job_integrations
from kq.plugins import build_plugin_manager
from kq.runtime import process
from kq.runtime.manager import Manager


async def install_controllers(manager: Manager, config: KqConfig) -> None:
    """Admission (quota reservation, preemption, queue status), the workload lifecycle
    (admission checks, deactivation, back-off), WorkloadPriorityClass values into Workloads,
    check controllers and job integrations."""
    pm = build_plugin_manager(config.plugins)
    pm.hook.kq_configure.call_historic(kwargs={"config": config})
    register_admission(manager, config, pm)
    register_workload_lifecycle(manager, config)
    register_priority_classes(manager)
    await register_admission_checks(manager, pm, config.namespace)
    await register_job_integrations(manager, pm, config)


def run_command(args: argparse.Namespace) -> int:
    """``kq run``."""
    return process.main(args, install_controllers)
