"""The built-in ``admission_fair_sharing`` plugin: Kueue's admission fair sharing (KEP-4136).

With the configuration's ``admissionFairSharing``, a ClusterQueue whose
``spec.admissionScope.admissionMode`` is ``UsageBasedAdmissionFairSharing`` orders its pending
workloads by their LocalQueue's decayed usage over its ``spec.fairSharing.weight`` (lower
first), then by its queueing strategy's order. An admission charges its LocalQueue an entry
penalty at once; a controller keeps the usage and persists it in LocalQueue status.
"""

from __future__ import annotations

from kq.plugin import (
    Admit,
    ClusterQueue,
    KqConfig,
    QueueOrder,
    Register,
    WorkloadInfo,
    hookimpl,
)
from kq_plugins.admission_fair_sharing.controller import AdmissionFairSharingController
from kq_plugins.admission_fair_sharing.ledger import Ledger

LEDGER = Ledger()
AdmissionFairSharingController.ledger = LEDGER


@hookimpl
def kq_configure(config: KqConfig) -> None:
    LEDGER.config = config.admission_fair_sharing


@hookimpl
def kq_register_controllers(register: Register) -> None:
    register(AdmissionFairSharingController)


@hookimpl(trylast=True)
def kq_queue_order(cluster_queue: ClusterQueue) -> QueueOrder | None:
    return LEDGER.order(cluster_queue)


@hookimpl
def kq_workload_admissible(workload: WorkloadInfo) -> str | None:
    return LEDGER.waiting(workload)


@hookimpl
def kq_on_decision(decision: object) -> None:
    if isinstance(decision, Admit):
        LEDGER.admitted(decision)
