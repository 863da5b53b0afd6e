"""Where a pod set's pods go on a topology flavor: whole slices in healthy domains with room.

A domain is the set of nodes sharing one value of the requested level's label (a node pool is a
TPU slice). Only nodes that match the flavor and the pod set, tolerate-wise and health-wise, and
have room after what kq already placed count as capacity. Slices are placed best-fit, one by
one, so the largest domains stay free for the largest requests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kq.api.node import Node
from kq.api.resourceflavor import ResourceFlavor
from kq.api.selectors import first_untolerated
from kq.api.topology import HOSTNAME, TopologyAssignment, TopologyRequest
from kq.api.workload import PodSet
from kq.cache.topology import TopologyView

Entry = tuple[str, str, int]
"""One slice's pods on one node: (domain, node, pods)."""
Slices = list[list[Entry]]


@dataclass(frozen=True, slots=True)
class Unplaced:
    message: str


@dataclass(slots=True)
class _Domains:
    """The request's domains over the nodes a pod set may use, with free pods per node."""

    level: str
    nodes: dict[str, list[Node]] = field(default_factory=dict)
    free: dict[str, int] = field(default_factory=dict)
    healthy: set[str] = field(default_factory=set)
    taken: set[str] = field(default_factory=set)
    """Domains holding other pods: closed to an exclusive slice."""
    closed: set[str] = field(default_factory=set)
    """Domains held by another workload's exclusive slice: closed to everyone."""

    def open(self, domain: str, exclusive: bool) -> bool:
        return domain not in self.closed and not (exclusive and domain in self.taken)

    def room(self, domain: str) -> int:
        return sum(self.free.get(n.name, 0) for n in self.nodes[domain])

    def take(self, domain: str, pods: int) -> list[Entry]:
        entries = []
        for node in sorted(self.nodes[domain], key=lambda n: n.name):
            n = min(pods, self.free.get(node.name, 0))
            if n > 0:
                entries.append((domain, node.name, n))
                self.free[node.name] -= n
                pods -= n
        self.taken.add(domain)
        return entries


def request_for(flavor: ResourceFlavor, pod_set: PodSet, count: int) -> TopologyRequest | None:
    """The pod set's request; a pod set on a topology flavor without one goes anywhere."""
    if pod_set.topology is not None:
        return pod_set.topology
    return TopologyRequest(None, count) if flavor.topology_name else None


def _levels_error(view: TopologyView, flavor: ResourceFlavor, level: str | None) -> str | None:
    if flavor.topology_name is None:
        return None  # kq's extension: the requested label alone is the topology
    topology = view.topologies.get(flavor.topology_name)
    if topology is None:
        return f'Topology "{flavor.topology_name}" of flavor {flavor.name} not found'
    if level is not None and level not in topology.levels:
        levels = ", ".join(topology.levels)
        return f'level "{level}" is not in Topology {topology.name} (levels: {levels})'
    return None


def _matches(node: Node, flavor: ResourceFlavor, pod_set: PodSet) -> bool:
    labels = node.labels
    if any(labels.get(k) != v for k, v in flavor.node_labels.items()):
        return False
    constraints = pod_set.node_constraints
    if any(labels.get(k) != v for k, v in constraints.node_selector):
        return False
    return not constraints.terms or any(
        all(r.matches(labels) for r in term) for term in constraints.terms
    )


def _fit(node: Node, used: Mapping[str, int], per_pod: Mapping[str, int], cap: int) -> int:
    fit = cap
    for resource, amount in per_pod.items():
        if amount > 0:
            free = node.allocatable.get(resource, 0) - used.get(resource, 0)
            fit = min(fit, max(0, free) // amount)
    return fit


def _domains(
    view: TopologyView,
    flavor: ResourceFlavor,
    pod_set: PodSet,
    request: TopologyRequest,
    ignore: frozenset[str],
    count: int,
) -> _Domains:
    level = request.level or ""
    out = _Domains(level)
    tolerations = (*pod_set.tolerations, *flavor.tolerations)
    for node in view.nodes.values():
        if not _matches(node, flavor, pod_set):
            continue
        domain = node.labels.get(level) if level else ""
        if domain is None:
            continue
        out.nodes.setdefault(domain, []).append(node)
        if not node.usable or first_untolerated(node.taints, tolerations) is not None:
            continue
        others = [k for k in view.holders(node.name) if k not in ignore]
        if others:
            out.taken.add(domain)
        if any(view.exclusive(k) for k in others):
            out.closed.add(domain)
        out.free[node.name] = _fit(node, view.used(node.name, ignore), pod_set.requests, count)
    for domain, nodes in out.nodes.items():
        usable = [n for n in nodes if n.name in out.free]
        if usable and (not request.exclusive or len(usable) == len(nodes)):
            out.healthy.add(domain)
    return out


def place(
    view: TopologyView,
    flavor: ResourceFlavor,
    pod_set: PodSet,
    count: int,
    request: TopologyRequest,
    ignore: frozenset[str] = frozenset(),
    keep: Mapping[int, list[Entry]] | None = None,
) -> TopologyAssignment | Unplaced:
    """Slices for ``count`` pods; ``keep`` holds slices that stay where they are (hot-swap),
    ``ignore`` the workloads whose placements count as gone (the workload itself, victims)."""
    error = _levels_error(view, flavor, request.level)
    if error is not None:
        return Unplaced(error)
    size = min(request.slice_size, count) or 1
    if count % size:
        return Unplaced(f"pod set {pod_set.name}: {count} pods do not make slices of {size}")
    domains = _domains(view, flavor, pod_set, request, ignore, count)
    if not domains.nodes:
        return Unplaced(_no_nodes(flavor, pod_set, request))
    slices: Slices = [[] for _ in range(count // size)]
    for index, entries in (keep or {}).items():
        slices[index] = list(entries)
        for domain, node, n in entries:
            domains.free[node] = domains.free.get(node, 0) - n
            domains.taken.add(domain)
    free = _free(domains, size, request.exclusive)
    needed = sum(1 for entries in slices if not entries)
    for index, entries in enumerate(slices):
        if entries:
            continue
        chosen = _choose(domains, size, request.exclusive)
        if chosen is None and request.preferred:
            slices[index] = _spread(domains, size)
        elif chosen is not None:
            slices[index] = domains.take(chosen, size)
        if not slices[index]:
            return Unplaced(_shortage(flavor, pod_set, request, domains, needed, size, free))
    return _assignment(request, slices)


def _free(domains: _Domains, size: int, exclusive: bool) -> int:
    return sum(1 for d in domains.healthy if domains.room(d) >= size and domains.open(d, exclusive))


def _choose(domains: _Domains, size: int, exclusive: bool) -> str | None:
    best: tuple[int, str] | None = None
    for domain in domains.healthy:
        if not domains.open(domain, exclusive):
            continue
        room = domains.room(domain)
        if room >= size and (best is None or (room, domain) < best):
            best = (room, domain)
    return None if best is None else best[1]


def _spread(domains: _Domains, size: int) -> list[Entry]:
    usable = [d for d in domains.healthy if domains.open(d, False)]
    if sum(domains.room(d) for d in usable) < size:
        return []
    entries: list[Entry] = []
    for domain in sorted(usable, key=lambda d: (-domains.room(d), d)):
        if size == 0:
            break
        n = min(size, domains.room(domain))
        entries += domains.take(domain, n)
        size -= n
    return entries


def _assignment(request: TopologyRequest, slices: Slices) -> TopologyAssignment:
    level = request.level
    if level and level != HOSTNAME:
        return TopologyAssignment(
            (level, HOSTNAME), tuple(((d, n), c) for entries in slices for d, n, c in entries)
        )
    return TopologyAssignment(
        (HOSTNAME,), tuple(((n,), c) for entries in slices for _, n, c in entries)
    )


def slices_of(assignment: TopologyAssignment, size: int) -> Slices:
    """An assignment cut back into slices of ``size`` pods, in order."""
    slices: Slices = [[]]
    filled = 0
    for values, count in assignment.domains:
        domain, node = (values[0], values[-1]) if len(values) > 1 else ("", values[-1])
        while count > 0:
            if filled == size:
                slices.append([])
                filled = 0
            n = min(count, size - filled)
            slices[-1].append((domain, node, n))
            filled += n
            count -= n
    return slices if slices[0] else []


def _no_nodes(flavor: ResourceFlavor, pod_set: PodSet, request: TopologyRequest) -> str:
    where = f"pod set {pod_set.name} in flavor {flavor.name}"
    if request.level:
        return (
            f"no node for {where} has the topology label {request.level}"
            " (or no node matches the flavor's nodeLabels and the pod set's node selector)"
        )
    return (
        f"no node matches the nodeLabels of flavor {flavor.name} and the node selector of {where}"
    )


def _shortage(
    flavor: ResourceFlavor,
    pod_set: PodSet,
    request: TopologyRequest,
    domains: _Domains,
    slices: int,
    size: int,
    free: int,
) -> str:
    level = request.level or "node"
    failed = sorted(set(domains.nodes) - domains.healthy)
    message = (
        f"insufficient healthy topology domains for pod set {pod_set.name} in flavor "
        f"{flavor.name}: needs {slices} {level} domain(s) with room for {size} pods each; "
        f"{len(domains.nodes)} exist, {len(domains.healthy)} healthy, {free} free"
    )
    if failed and request.level:
        message += f" (not healthy: {', '.join(failed[:5])}{', ...' if len(failed) > 5 else ''})"
    return message


def affected_slices(
    assignment: TopologyAssignment, size: int, failed: frozenset[str]
) -> tuple[Slices, list[int]]:
    """The assignment's slices and the indexes of those with a pod on a failed node."""
    slices = slices_of(assignment, size)
    hit = [i for i, entries in enumerate(slices) if any(n in failed for _, n, _ in entries)]
    return slices, hit


def keep_except(slices: Sequence[list[Entry]], lost: Sequence[int]) -> dict[int, list[Entry]]:
    return {i: entries for i, entries in enumerate(slices) if i not in lost}
