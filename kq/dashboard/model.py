"""What the page shows, built from the objects the API server returned: plain data that
``kq.dashboard.render`` draws and ``/api/state`` serves as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kq.dashboard.quota import CohortNode, cohort_tree
from kq.dashboard.timeline import Lane, lanes

Object = Mapping[str, Any]
PENDING_SHOWN = 50
"""Pending workloads read per ClusterQueue (the visibility API's ``limit``)."""


@dataclass(frozen=True)
class Pending:
    """One entry of a visibility API summary: where a workload stands."""

    namespace: str
    name: str
    local_queue: str
    priority: int
    in_cluster_queue: int
    in_local_queue: int


@dataclass(frozen=True)
class LocalQueueRow:
    namespace: str
    name: str
    cluster_queue: str
    pending: int
    admitted: int


@dataclass(frozen=True)
class WorkloadRow:
    namespace: str
    name: str
    local_queue: str
    cluster_queue: str
    priority: int
    state: str
    message: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Explanation:
    key: str
    state: str
    lines: list[str]
    problem: str = ""
    """Why there is none (the workload is gone, the replica does not lead...)."""


@dataclass
class Lists:
    """The objects read from the API server, by kind; ``problems`` says what could not be."""

    cohorts: list[Object] = field(default_factory=list)
    cluster_queues: list[Object] = field(default_factory=list)
    local_queues: list[Object] = field(default_factory=list)
    workloads: list[Object] = field(default_factory=list)
    events: list[Object] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class View:
    now: float
    cohorts: list[CohortNode]
    local_queues: list[LocalQueueRow]
    workloads: list[WorkloadRow]
    pending: dict[str, list[Pending]]
    """Per ClusterQueue, in queue order, from the visibility API."""
    lanes: list[Lane]
    problems: list[str]
    explanation: Explanation | None = None


def build_view(lists: Lists, pending: dict[str, list[Pending]], now: float) -> View:
    return View(
        now=now,
        cohorts=cohort_tree(lists.cohorts, lists.cluster_queues),
        local_queues=sorted(
            map(_local_queue, lists.local_queues), key=lambda r: (r.namespace, r.name)
        ),
        workloads=sorted((_workload(raw) for raw in lists.workloads), key=_by_state),
        pending=pending,
        lanes=lanes(lists.workloads, lists.events),
        problems=list(lists.problems),
    )


def pending_items(summary: Object) -> list[Pending]:
    """The items of a ``PendingWorkloadsSummary``."""
    return [
        Pending(
            namespace=str((item.get("metadata") or {}).get("namespace", "")),
            name=str((item.get("metadata") or {}).get("name", "")),
            local_queue=str(item.get("localQueueName", "")),
            priority=int(item.get("priority") or 0),
            in_cluster_queue=int(item.get("positionInClusterQueue") or 0),
            in_local_queue=int(item.get("positionInLocalQueue") or 0),
        )
        for item in summary.get("items") or ()
    ]


def _local_queue(raw: Object) -> LocalQueueRow:
    meta, spec, status = raw.get("metadata") or {}, raw.get("spec") or {}, raw.get("status") or {}
    return LocalQueueRow(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        cluster_queue=str(spec.get("clusterQueue", "")),
        pending=int(status.get("pendingWorkloads") or 0),
        admitted=int(status.get("admittedWorkloads") or 0),
    )


_ORDER = {"Pending": 0, "QuotaReserved": 1, "Admitted": 2, "Inactive": 3, "Finished": 4}


def _by_state(row: WorkloadRow) -> tuple[int, str]:
    return _ORDER.get(row.state, 5), row.key


def _workload(raw: Object) -> WorkloadRow:
    meta, spec, status = raw.get("metadata") or {}, raw.get("spec") or {}, raw.get("status") or {}
    conditions = {str(c.get("type")): c for c in status.get("conditions") or ()}
    state, message = _state(spec, conditions)
    admission = status.get("admission") or {}
    return WorkloadRow(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        local_queue=str(spec.get("queueName", "")),
        cluster_queue=str(admission.get("clusterQueue", "")),
        priority=int(spec.get("priority") or 0),
        state=state,
        message=message,
    )


def _state(spec: Object, conditions: Mapping[str, Object]) -> tuple[str, str]:
    def true(kind: str) -> bool:
        return (conditions.get(kind) or {}).get("status") == "True"

    def words(kind: str) -> str:
        return str((conditions.get(kind) or {}).get("message") or "")

    if true("Finished"):
        return "Finished", words("Finished")
    if spec.get("active") is False:
        return "Inactive", words("Evicted")
    if true("Admitted"):
        return "Admitted", words("Admitted")
    if true("QuotaReserved"):
        return "QuotaReserved", words("QuotaReserved")
    return "Pending", words("QuotaReserved") or words("Evicted")
