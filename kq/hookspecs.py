"""The contract between kq's core and its plugins.

Every extension point is a hook named ``kq_*``. Pluggy is synchronous, so hooks here either
register objects once at start-up (``kq_register_*``), make pure decisions over immutable
values, or observe. I/O-doing extensions (job integrations, admission-check controllers) are
*registered classes* implementing async Protocols, never async hook implementations: an async
hookimpl returns an un-awaited coroutine that would win every ``firstresult`` call.

Conventions, as in pytest's hookspec: ``firstresult`` hooks stop at the first non-``None``
result and ``None`` means "abstain"; kq's built-in defaults are ``trylast`` so third-party
implementations win. Implementations may accept a subset of the parameters; parameters may be
added later, never removed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from kq.api.clusterqueue import ClusterQueue
    from kq.config import KqConfig
    from kq.queue.order import QueueOrder
    from kq.scheduler.cycle import CycleResult
    from kq.scheduler.decisions import Decision
    from kq.scheduler.modes import AdmissionTerms
    from kq.workload.info import WorkloadInfo

PROJECT_NAME = "kq"
ENTRY_POINT_GROUP = "kq"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

Register = Callable[[Any], None]
"""``register(obj)``: adds one named implementation; a duplicate name is an error naming both."""


# -- lifecycle -------------------------------------------------------------------------------


@hookspec(historic=True)
def kq_configure(config: KqConfig) -> None:
    """Called once with the validated configuration, and replayed to plugins registered later.

    Plugins read their own settings here; no I/O that can block start-up.
    """


@hookspec
def kq_report_header(config: KqConfig) -> list[str] | str | None:
    """Lines a plugin adds to ``kq version`` and the start-up log (name, version, mode).

    Pure; return ``None`` to add nothing.
    """


# -- registration (once at start-up; names must be unique across plugins) ----------------------


@hookspec
def kq_register_queueing_strategies(register: Register) -> None:
    """Register ``kq.queue.strategy.QueueingStrategy`` classes; ``NAME`` = ``queueingStrategy``.

    Instantiated once; built-ins: ``StrictFIFO`` and ``BestEffortFIFO``.
    """


@hookspec
def kq_register_flavor_assigners(register: Register) -> None:
    """Register ``kq.scheduler.protocols.FlavorAssigner`` classes, chosen per ClusterQueue.

    Chosen by annotation ``kq.dev/flavor-assignment``; built-ins: InOrder, MinimizeBorrowing.
    """


@hookspec
def kq_register_preemption_policies(register: Register) -> None:
    """Register ``kq.scheduler.protocols.Preemptor`` classes that propose victims for a head.

    Built-in: ``ClassicPreemption`` (within ClusterQueue, reclaim and borrow within cohort).
    """


@hookspec
def kq_register_hot_swap_policies(register: Register) -> None:
    """Register ``kq.plugin.HotSwapPolicy`` classes that re-place workloads on failed nodes.

    Chosen by ClusterQueue annotation ``kq.dev/hot-swap``; built-in: ``SliceHotSwap``.
    """


@hookspec
def kq_register_admission_checks(register: Register) -> None:
    """Register ``kq.admissionchecks.AdmissionCheckController`` classes by ``CONTROLLER_NAME``.

    kq owns the generic lifecycle; built-in: ``kueue.x-k8s.io/provisioning-request``.
    """


@hookspec
def kq_register_job_integrations(register: Register) -> None:
    """Register ``kq.jobframework.GenericJob`` classes; ``NAME`` is the framework name.

    Instantiated once without arguments and checked against the Protocol at registration;
    optional capabilities are the ``JobWith*`` Protocols. Methods are pure over job dicts.
    Built-ins: ``batch/job``, ``jobset.x-k8s.io/jobset``, ``ray.io/rayjob``,
    ``kubeflow.org/mpijob``.
    """


@hookspec
def kq_register_controllers(register: Register) -> None:
    """Register ``kq.plugin.PluginController`` classes: a plugin's own async loop (watch, write).

    kq runs ``run(ctx)`` on the leader of ``kq run`` and ``kq dev``; e.g. the ``budgets`` plugin.
    """


# -- decisions inside the scheduling cycle (pure, synchronous, over immutable snapshots) --------


@hookspec(firstresult=True)
def kq_workload_admissible(workload: WorkloadInfo, cluster_queue: ClusterQueue) -> str | None:
    """Veto a head before flavor assignment: return the reason it may not be admitted now.

    ``None`` abstains; the reason becomes the Workload's pending message and the span's reason.
    """


@hookspec(firstresult=True)
def kq_admission_terms(
    workload: WorkloadInfo, cluster_queue: ClusterQueue
) -> AdmissionTerms | None:
    """Terms for a head the veto let through: ``kq.plugin.AdmissionTerms(borrow_only=True)``
    admits it only on capacity borrowed from the cohort, never by preemption; ``None``: as usual.
    """


@hookspec(firstresult=True)
def kq_queue_order(cluster_queue: ClusterQueue) -> QueueOrder | None:
    """A ``kq.plugin.QueueOrder`` whose keys sort the ClusterQueue's pending workloads before
    its strategy's order, or ``None``; asked whenever the ClusterQueue is created or changes.
    """


# -- observers (results ignored; must not do I/O inline — hand off to a queue) ----------------


@hookspec
def kq_on_decision(decision: Decision) -> None:
    """Called for each workload decision of a scheduling cycle (admit, park, preempt, skip).

    For audit, explanations and notifications; the decision is immutable.
    """


@hookspec
def kq_on_cycle_end(summary: CycleResult) -> None:
    """Called once at the end of every scheduling cycle with its summary.

    For metrics and tracing plugins.
    """
