"""Which optional Kueue series are on, and the replica's role that labels every series."""

from __future__ import annotations

import contextlib

from kq.observability import lq_metrics, metrics


class _State:
    role = metrics.STANDALONE
    local_queues = False
    cluster_queue_resources = False


state = _State()


def enable(*, local_queues: bool, cluster_queue_resources: bool) -> None:
    """Register the optional series the configuration asks for (idempotent)."""
    if local_queues and not state.local_queues:
        for metric in lq_metrics.ALL:
            metrics.REGISTRY.register(metric)
        metrics.REGISTRY.register(metrics.Unchecked(lq_metrics.finished_workloads))
        state.local_queues = True
    if cluster_queue_resources and not state.cluster_queue_resources:
        for metric in metrics.CLUSTER_QUEUE_RESOURCES:
            metrics.REGISTRY.register(metric)
        state.cluster_queue_resources = True


def set_role(role: str) -> None:
    """A new role drops every role-labelled gauge series, as Kueue does on a role change:
    the old role's values would linger beside the new ones. The leader sets them again at
    its next queue refresh."""
    if role == state.role:
        return
    state.role = role
    for gauge in (*metrics.ROLE_GAUGES, *lq_metrics.GAUGES):
        gauge.clear()


def role() -> str:
    return state.role


def report_admission_fair_sharing_usage(
    local_queue: str, namespace: str, cluster_queue: str, usage: float | None
) -> None:
    """Set (``None``: remove) a LocalQueue's ``kueue_local_queue_admission_fair_sharing_usage``."""
    gauge = lq_metrics.admission_fair_sharing_usage
    labels = (local_queue, namespace, cluster_queue, state.role)
    if usage is not None:
        gauge.labels(*labels).set(usage)
        return
    with contextlib.suppress(KeyError):  # never reported
        gauge.remove(*labels)
