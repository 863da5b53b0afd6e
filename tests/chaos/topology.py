"""What the storm runs on: ClusterQueues in a cohort (borrowing, lending, preemption, StrictFIFO)
and one alone, and a seeded mix of bare Workloads and suspended Jobs submitted to them.

The quota each queue is given is written here once and read twice: into the manifests, and by
the invariant checker, which so never trusts what the API server or kq says the quota is.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

KUEUE = "kueue.x-k8s.io/v1beta1"
RESOURCE = "cpu"
COHORT = "chaos"
LOW, HIGH = "chaos-low", "chaos-high"
NEVER_FITS_CPU = 64
"""A request no queue can ever hold: such a Workload must stay pending, saying why."""


@dataclass(frozen=True)
class Quota:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class Queue:
    """A ClusterQueue, its namespace and LocalQueue ``lq`` (named after it)."""

    name: str
    cohort: str | None
    quotas: Mapping[str, Quota]
    """Flavor → quota of ``cpu``, in the order flavors are tried."""
    preemption: Mapping[str, Any] = field(default_factory=dict)
    strategy: str = "BestEffortFIFO"


QUEUES = (
    Queue(
        "team-a",
        COHORT,
        {"chaos-main": Quota(6, borrowing_limit=4)},
        {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
    ),
    Queue(
        "team-b",
        COHORT,
        {"chaos-main": Quota(6, lending_limit=3), "chaos-spot": Quota(2)},
        {
            "withinClusterQueue": "LowerPriority",
            "reclaimWithinCohort": "LowerPriority",
            "borrowWithinCohort": {"policy": "LowerPriority"},
        },
    ),
    Queue("team-c", COHORT, {"chaos-main": Quota(4)}, strategy="StrictFIFO"),
    Queue("solo", None, {"chaos-main": Quota(4)}, {"withinClusterQueue": "LowerPriority"}),
)
FLAVORS = ("chaos-main", "chaos-spot")


def _cluster_queue(q: Queue) -> dict[str, Any]:
    flavors = []
    for name, quota in q.quotas.items():
        entry: dict[str, Any] = {"name": RESOURCE, "nominalQuota": quota.nominal}
        if quota.borrowing_limit is not None:
            entry["borrowingLimit"] = quota.borrowing_limit
        if quota.lending_limit is not None:
            entry["lendingLimit"] = quota.lending_limit
        flavors.append({"name": name, "resources": [entry]})
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": q.name}},
        "queueingStrategy": q.strategy,
        "resourceGroups": [{"coveredResources": [RESOURCE], "flavors": flavors}],
        "preemption": dict(q.preemption),
    }
    if q.cohort:
        spec["cohort"] = q.cohort
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": q.name}, "spec": spec}


def manifests() -> list[tuple[str, dict[str, Any]]]:
    """(plural, object) for everything the mix needs, in an order the API server accepts."""
    out: list[tuple[str, dict[str, Any]]] = []
    for name in FLAVORS:
        flavor = {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}}
        out.append(("resourceflavors", flavor))
    for name, value in ((LOW, 10), (HIGH, 100)):
        wpc = {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass"}
        out.append(("workloadpriorityclasses", {**wpc, "metadata": {"name": name}, "value": value}))
    for q in QUEUES:
        out.append(
            ("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": q.name}})
        )
        out.append(("clusterqueues", _cluster_queue(q)))
        lq = {"apiVersion": KUEUE, "kind": "LocalQueue", "spec": {"clusterQueue": q.name}}
        out.append(("localqueues", {**lq, "metadata": {"namespace": q.name, "name": "lq"}}))
    return out


@dataclass(frozen=True)
class Submission:
    """One object the generator creates: a bare Workload or a suspended Job."""

    kind: str  # "Workload" or "Job"
    namespace: str
    name: str
    count: int
    cpu: int
    priority_class: str
    hold: float
    """Seconds the fake job controller lets it run once admitted before finishing it."""

    def body(self) -> dict[str, Any]:
        pod = {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "resources": {"requests": {RESOURCE: str(self.cpu)}},
                }
            ],
        }
        meta: dict[str, Any] = {"namespace": self.namespace, "name": self.name}
        if self.kind == "Workload":
            spec = {
                "queueName": "lq",
                "priorityClassName": self.priority_class,
                "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                "podSets": [{"name": "main", "count": self.count, "template": {"spec": pod}}],
            }
            return {"apiVersion": KUEUE, "kind": "Workload", "metadata": meta, "spec": spec}
        meta["labels"] = {
            "kueue.x-k8s.io/queue-name": "lq",
            "kueue.x-k8s.io/priority-class": self.priority_class,
        }
        job_spec = {
            "suspend": True,
            "parallelism": self.count,
            "completions": self.count,
            "template": {"spec": pod},
        }
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec}


class Mix:
    """The seeded sequence of submissions: mostly small, a fifth high priority, a third Jobs,
    and (first) one per queue that can never fit."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self._made = 0

    def never_fits(self) -> list[Submission]:
        return [
            Submission("Workload", q.name, "never-fits", 1, NEVER_FITS_CPU, LOW, 0.0)
            for q in QUEUES
        ]

    def next(self) -> Submission:
        r = self._random
        self._made += 1
        kind = "Job" if r.random() < 0.3 else "Workload"
        queue = r.choice(QUEUES)
        prefix = "j" if kind == "Job" else "w"
        count, cpu = r.choice((1, 1, 1, 2, 3)), r.choice((1, 1, 2))
        if queue.cohort is None:
            # Alone, a queue holds no more than its quota. Bigger shapes would never fit: only
            # the never-fits Workloads are meant to wait for good.
            count = min(count, max(1, sum(q.nominal for q in queue.quotas.values()) // cpu))
        return Submission(
            kind=kind,
            namespace=queue.name,
            name=f"{prefix}-{self._made:05d}",
            count=count,
            cpu=cpu,
            priority_class=HIGH if r.random() < 0.2 else LOW,
            hold=round(r.uniform(0.3, 2.0), 2),
        )
