"""The cohort tree, and each ClusterQueue's quota per flavor and resource: nominal, used,
borrowed and lent.

Used and borrowed are the ClusterQueue's own status (``flavorsUsage``). Neither Kueue nor kq
records whose idle quota a borrower runs on, so *lent* is an estimate: the borrowed total of a
root cohort's tree is shared among its lenders (queues and cohorts with idle lendable quota)
in proportion to what each leaves idle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kq.api.clusterqueue import ClusterQueue, parse_cluster_queue
from kq.api.cohort import Cohort, parse_cohort
from kq.api.invalid import Invalid
from kq.api.quantity import QuantityError, to_amount
from kq.api.quotas import FlavorResource, ResourceQuota

Object = Mapping[str, Any]
NO_COHORT = ""
"""The root that gathers the ClusterQueues in no cohort (they neither lend nor borrow)."""


@dataclass
class Usage:
    """One flavor and resource of a ClusterQueue (or a cohort's own quota), in Kueue's
    integer amounts (thousandths for cpu)."""

    flavor: str
    resource: str
    nominal: int
    used: int = 0
    borrowed: int = 0
    lent: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None

    @property
    def idle_lendable(self) -> int:
        idle = max(0, self.nominal - self.used)
        return idle if self.lending_limit is None else min(idle, self.lending_limit)


@dataclass
class QueueNode:
    name: str
    strategy: str
    usage: list[Usage]
    pending: int
    admitted: int
    problem: str = ""
    """Why the spec could not be read, or the queue's inactive reason."""


@dataclass
class CohortNode:
    name: str
    quota: list[Usage] = field(default_factory=list)
    """The cohort's own quota (a Cohort object's resourceGroups), lent to its subtree."""
    cohorts: list[CohortNode] = field(default_factory=list)
    queues: list[QueueNode] = field(default_factory=list)

    def walk_usage(self) -> Iterable[Usage]:
        yield from self.quota
        for queue in self.queues:
            yield from queue.usage
        for child in self.cohorts:
            yield from child.walk_usage()


def cohort_tree(cohorts: Sequence[Object], cluster_queues: Sequence[Object]) -> list[CohortNode]:
    """The roots, by name; ClusterQueues without a cohort under the ``NO_COHORT`` root, last.
    A cohort only named by a ClusterQueue or as a parent is a node without quota."""
    nodes: dict[str, CohortNode] = {}
    parents: dict[str, str | None] = {}
    for raw in cohorts:
        spec = parse_cohort(raw)
        if isinstance(spec, Invalid):
            continue  # the controller reports it on the Cohort; its members still show
        nodes[spec.name] = CohortNode(spec.name, _cohort_quota(spec))
        parents[spec.name] = spec.parent
    alone = CohortNode(NO_COHORT)
    for raw in cluster_queues:
        queue, cohort = _queue_node(raw)
        if cohort is None:
            alone.queues.append(queue)
            continue
        nodes.setdefault(cohort, CohortNode(cohort)).queues.append(queue)
        parents.setdefault(cohort, None)
    roots = _link(nodes, parents)
    for root in roots:
        share_lending(list(root.walk_usage()))
    return roots + ([alone] if alone.queues else [])


def _link(nodes: dict[str, CohortNode], parents: dict[str, str | None]) -> list[CohortNode]:
    for parent in list(parents.values()):
        if parent is not None and parent not in nodes:
            nodes[parent] = CohortNode(parent)
            parents[parent] = None
    roots = []
    for name in sorted(nodes):
        parent = parents.get(name)
        if parent is None or _cycles(name, parents):
            roots.append(nodes[name])
        else:
            nodes[parent].cohorts.append(nodes[name])
    for node in nodes.values():
        node.cohorts.sort(key=lambda c: c.name)
        node.queues.sort(key=lambda q: q.name)
    return roots


def _cycles(name: str, parents: Mapping[str, str | None]) -> bool:
    """A cohort in a parent cycle shows as a root (Kueue refuses such a tree anyway)."""
    seen = {name}
    parent = parents.get(name)
    while parent is not None:
        if parent in seen:
            return True
        seen.add(parent)
        parent = parents.get(parent)
    return False


def _cohort_quota(spec: Cohort) -> list[Usage]:
    return [_usage(fr, quota) for fr, quota in spec.quotas.items()]


def _usage(fr: FlavorResource, quota: ResourceQuota) -> Usage:
    return Usage(fr[0], fr[1], quota.nominal, borrowing_limit=quota.borrowing_limit,
                 lending_limit=quota.lending_limit)  # fmt: skip


def _queue_node(raw: Object) -> tuple[QueueNode, str | None]:
    spec = parse_cluster_queue(raw)
    status = raw.get("status") or {}
    pending, admitted = (
        int(status.get("pendingWorkloads") or 0),
        int(status.get("admittedWorkloads") or 0),
    )
    if isinstance(spec, Invalid):
        name = str((raw.get("metadata") or {}).get("name", ""))
        return QueueNode(name, "", [], pending, admitted, spec.message), None
    usage = _queue_usage(spec, status)
    return QueueNode(spec.name, spec.queueing_strategy, usage, pending, admitted,
                     _inactive(status)), spec.cohort  # fmt: skip


def _queue_usage(spec: ClusterQueue, status: Object) -> list[Usage]:
    rows = {fr: _usage(fr, quota) for fr, quota in spec.quotas.items()}
    for flavor in status.get("flavorsUsage") or ():
        for resource in flavor.get("resources") or ():
            fr = (str(flavor.get("name", "")), str(resource.get("name", "")))
            row = rows.setdefault(fr, Usage(fr[0], fr[1], 0))
            row.used = _amount(fr[1], resource.get("total"))
            row.borrowed = _amount(fr[1], resource.get("borrowed"))
    order = {fr: i for i, fr in enumerate(spec.quotas)}
    return [rows[fr] for fr in sorted(rows, key=lambda fr: (order.get(fr, len(order)), fr))]


def _amount(resource: str, value: object) -> int:
    try:
        return to_amount(resource, value or 0)
    except QuantityError:
        return 0  # a status kq wrote is well formed; a foreign one is not worth a crash


def _inactive(status: Object) -> str:
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Active" and condition.get("status") != "True":
            return f"inactive: {condition.get('reason')}: {condition.get('message')}"
    return ""


def share_lending(rows: list[Usage]) -> None:
    """Set ``lent`` on the rows of one root cohort's tree, per flavor and resource: the
    borrowed total shared in proportion to idle lendable quota, the largest remainders
    rounded up so the shares add up to what is borrowed (as far as there is idle quota)."""
    by_key: dict[FlavorResource, list[Usage]] = {}
    for row in rows:
        by_key.setdefault((row.flavor, row.resource), []).append(row)
    for group in by_key.values():
        borrowed = sum(r.borrowed for r in group)
        idle = [(r, r.idle_lendable) for r in group]
        total = sum(amount for _, amount in idle)
        if not borrowed or not total:
            continue
        wanted = min(borrowed, total)
        shares = [(r, wanted * amount // total, wanted * amount % total) for r, amount in idle]
        left = wanted - sum(share for _, share, _ in shares)
        for rank, (row, share, _) in enumerate(sorted(shares, key=lambda s: -s[2])):
            row.lent = share + (1 if rank < left else 0)
