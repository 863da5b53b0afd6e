"""The figures of a run: per workload, per ClusterQueue and per cohort, and their time series.

Utilisation is usage over nominal quota, averaged over time (usage is a step function, so
the mean is weighted by how long each value held). ``borrowed`` is usage above nominal quota.
``lent`` by a ClusterQueue is its share of what its cohort tree borrows, apportioned by the
idle nominal quota each member could lend (its lending limit respected) and the cohorts'
own quota: Kueue does not say whose quota a borrower uses, so this is an estimate.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

from kq.api.quotas import FlavorResource
from kq.cache.quota_tree import QuotaNode
from kq.simulate.record import Sample
from kq.simulate.run import Run


@dataclass
class Series:
    """A node's state after each sample: ``values[name][i]`` holds at ``times[i]``."""

    times: list[float] = field(default_factory=list)
    used: dict[FlavorResource, list[int]] = field(default_factory=dict)
    borrowed: dict[FlavorResource, list[int]] = field(default_factory=dict)
    lent: dict[FlavorResource, list[float]] = field(default_factory=dict)
    pending: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)


@dataclass
class NodeFigures:
    name: str
    kind: str
    """``ClusterQueue`` or ``Cohort``."""
    parent: str | None
    nominal: dict[FlavorResource, int]
    series: Series
    workloads: int = 0
    admitted: int = 0
    pending_at_end: int = 0
    preemptions: int = 0
    waits: list[float] = field(default_factory=list)


def _members(node: QuotaNode) -> list[QuotaNode]:
    stack, out = [node], []
    while stack:
        current = stack.pop()
        if current.is_cluster_queue:
            out.append(current)
        stack.extend(current.children)
    return out


def _subtree_cohort_quota(node: QuotaNode, fr: FlavorResource) -> int:
    own = 0 if node.is_cluster_queue else node.quotas.get(fr, _ZERO).nominal
    return own + sum(_subtree_cohort_quota(c, fr) for c in node.children)


class _Zero:
    nominal = 0
    lending_limit: int | None = None


_ZERO = _Zero()


def _lent(root: QuotaNode, sample: Sample, fr: FlavorResource) -> dict[str, float]:
    members = _members(root)
    used = {m.name: sample.queues[m.name].usage.get(fr, 0) for m in members}
    borrowed = sum(max(0, used[m.name] - m.quotas.get(fr, _ZERO).nominal) for m in members)
    if not borrowed:
        return {}
    idle = {}
    for m in members:
        quota = m.quotas.get(fr, _ZERO)
        spare = max(0, quota.nominal - used[m.name])
        idle[m.name] = spare if quota.lending_limit is None else min(spare, quota.lending_limit)
    pool = sum(idle.values()) + _subtree_cohort_quota(root, fr)
    return {n: min(v, borrowed * v / pool) for n, v in idle.items() if v and pool}


def compute(run: Run) -> dict[str, NodeFigures]:
    """Figures for every ClusterQueue and cohort of ``run``, keyed ``kind/name``."""
    tree = run.core.cache.tree()
    nodes: dict[str, NodeFigures] = {}
    for name, node in tree.cluster_queues.items():
        parent = node.parent.name if node.parent is not None else None
        quotas = {fr: q.nominal for fr, q in node.quotas.items()}
        nodes[f"ClusterQueue/{name}"] = NodeFigures(name, "ClusterQueue", parent, quotas, Series())
    for name, node in tree.cohorts.items():
        parent = node.parent.name if node.parent is not None else None
        nodes[f"Cohort/{name}"] = NodeFigures(name, "Cohort", parent, dict(node.subtree), Series())
    for sample in run.recorder.samples:
        _add_sample(nodes, tree.cluster_queues, tree.cohorts, sample)
    _add_workloads(run, nodes)
    return nodes


def _add_sample(
    nodes: dict[str, NodeFigures],
    queues: Mapping[str, QuotaNode],
    cohorts: Mapping[str, QuotaNode],
    sample: Sample,
) -> None:
    lent: dict[str, dict[FlavorResource, float]] = {}
    roots = {id(n.root()): n.root() for n in queues.values() if n.parent is not None}
    for root in roots.values():
        frs = {fr for m in _members(root) for fr in m.quotas}
        for fr in frs:
            for name, amount in _lent(root, sample, fr).items():
                lent.setdefault(name, {})[fr] = amount
    for name in queues:
        state = sample.queues[name]
        figures = nodes[f"ClusterQueue/{name}"]
        _append(figures, sample.time, state.usage, state.pending, state.running, lent.get(name))
    for name, node in cohorts.items():
        states = [sample.queues[m.name] for m in _members(node)]
        usage: dict[FlavorResource, int] = {}
        for state in states:
            for fr, amount in state.usage.items():
                usage[fr] = usage.get(fr, 0) + amount
        pending = sum(s.pending for s in states)
        running = sum(s.running for s in states)
        _append(nodes[f"Cohort/{name}"], sample.time, usage, pending, running, None)


def _append(
    figures: NodeFigures,
    at: float,
    usage: Mapping[FlavorResource, int],
    pending: int,
    running: int,
    lent: Mapping[FlavorResource, float] | None,
) -> None:
    series = figures.series
    series.times.append(at)
    series.pending.append(pending)
    series.running.append(running)
    # A node only ever uses the flavor/resources it has quota for (its subtree's, a cohort).
    for fr, nominal in figures.nominal.items():
        used = usage.get(fr, 0)
        series.used.setdefault(fr, []).append(used)
        series.borrowed.setdefault(fr, []).append(max(0, used - nominal))
        series.lent.setdefault(fr, []).append((lent or {}).get(fr, 0.0))


def _add_workloads(run: Run, nodes: dict[str, NodeFigures]) -> None:
    pending, tree = set(run.pending), run.core.cache.tree()
    for record in run.recorder.workloads.values():
        chain = [f"ClusterQueue/{record.cluster_queue}"]
        node = tree.cluster_queues.get(record.cluster_queue)
        parent = node.parent if node is not None else None
        while parent is not None:
            chain.append(f"Cohort/{parent.name}")
            parent = parent.parent
        for key in chain:
            figures = nodes.get(key)
            if figures is None:
                continue
            figures.workloads += 1
            figures.preemptions += record.preemptions
            figures.pending_at_end += record.key in pending
            if record.wait is not None:
                figures.admitted += 1
                figures.waits.append(record.wait)


def time_mean(times: list[float], values: list[float] | list[int], end: float) -> float:
    """The mean of a step function over ``[times[0], end]``."""
    if not times:
        return 0.0
    span = end - times[0]
    if span <= 0:
        return float(values[-1])
    total = 0.0
    for i, value in enumerate(values):
        until = times[i + 1] if i + 1 < len(times) else end
        total += value * (until - times[i])
    return total / span


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else 0.0


def wait_summary(waits: list[float]) -> dict[str, float | None]:
    if not waits:
        return {"mean": None, "p50": None, "p90": None, "max": None}
    return {
        "mean": statistics.fmean(waits),
        "p50": percentile(waits, 50),
        "p90": percentile(waits, 90),
        "max": max(waits),
    }
