"""A kube-scheduler stand-in: filter nodes for each pending pod, pick one, bind.

Filters run in kube-scheduler's default order and a node stops at its first failing filter,
so the ``0/N nodes are available: …`` message counts one reason per node as upstream does.
Placement is deterministic (best score, then node name) and pods bound earlier in the same call
consume capacity and count for pod (anti-)affinity.

A node that is not Ready never gets a pod, even one tolerating its taints (kube would bind that
one, to wait for a kubelet the sandbox does not have); a cordoned node takes only pods tolerating
``node.kubernetes.io/unschedulable``, as kube-scheduler's NodeUnschedulable filter allows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kq.api.podrequests import pod_requests
from kq.api.quantity import to_amount
from kq.api.selectors import (
    LabelSelector,
    Taint,
    Toleration,
    parse_label_selector,
    parse_tolerations,
)
from kq.sandbox.cluster.actions import Action, Create, Event, Obj, Patch, Ref, meta
from kq.sandbox.cluster.clock import rfc3339
from kq.sandbox.cluster.nodeaffinity import matches_node
from kq.sandbox.cluster.nodes import PROVISIONING_REQUEST_ANNOTATION
from kq.sandbox.cluster.podinfo import (
    UNSCHEDULABLE_TAINT,
    annotations_of,
    condition,
    effective_taints,
    is_terminal,
    labels_of,
    node_name_of,
    ready_status,
)

SCHEDULER_NAME = "default-scheduler"
CONSUME_ANNOTATIONS = (
    "autoscaling.x-k8s.io/consume-provisioning-request",
    "cluster-autoscaler.kubernetes.io/consume-provisioning-request",
)
QUEUED_TAINT = "cloud.google.com/gke-queued"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
_CORDON = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")


@dataclass(frozen=True, slots=True)
class _Term:
    """One required pod (anti-)affinity term, resolved against its owner pod's namespace."""

    selector: LabelSelector | None
    namespaces: frozenset[str] | None  # None: every namespace
    topology_key: str

    def selects(self, pod: Mapping[str, Any]) -> bool:
        ns = str(meta(pod).get("namespace", ""))
        if self.namespaces is not None and ns not in self.namespaces:
            return False
        return self.selector is not None and self.selector.matches(labels_of(pod))


def _terms(pod: Mapping[str, Any], kind: str) -> tuple[_Term, ...]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    own_ns = str(meta(pod).get("namespace", ""))
    out = []
    for raw in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        names = raw.get("namespaces") or []
        ns_selector = raw.get("namespaceSelector")
        namespaces: frozenset[str] | None
        if ns_selector is not None and not ns_selector:
            namespaces = None  # an empty namespaceSelector means all namespaces
        else:
            namespaces = frozenset(names) if names else frozenset({own_ns})
        out.append(
            _Term(parse_label_selector(raw.get("labelSelector")), namespaces, raw["topologyKey"])
        )
    return tuple(out)


@dataclass(slots=True)
class _NodeState:
    node: Obj
    name: str
    labels: Mapping[str, str]
    allocatable: dict[str, int]
    free: dict[str, int]
    taints: tuple[Taint, ...]
    booked: str
    ready: bool
    pods: list[Obj] = field(default_factory=list)


def _node_state(node: Obj) -> _NodeState:
    raw = (node.get("status") or {}).get("allocatable") or {}
    alloc = {str(k): to_amount(str(k), v) for k, v in raw.items()}
    return _NodeState(
        node=node,
        name=str(meta(node)["name"]),
        labels=labels_of(node),
        allocatable=alloc,
        free=dict(alloc),
        taints=effective_taints(node),
        booked=str(annotations_of(node).get(PROVISIONING_REQUEST_ANNOTATION, "")),
        ready=ready_status(node) == "True",
    )


@dataclass(frozen=True, slots=True)
class _Candidate:
    """What the filters need to know about the pod being placed, worked out once per pod."""

    pod: Obj
    requests: Mapping[str, int]
    tolerations: tuple[Toleration, ...]
    wants: str  # the ProvisioningRequest whose booked nodes the pod must use, or ""
    # (topologyKey, value) domains closed by existing pods' anti-affinity, then by the pod's own
    shunned_by_others: frozenset[tuple[str, str]]
    shunned: frozenset[tuple[str, str]]
    # per required affinity term: its topology key and the domains holding a matching pod
    affinity: tuple[tuple[str, frozenset[str]], ...]
    bootstrap: bool  # first pod of a self-affine group: affinity terms are waived


@dataclass(frozen=True, slots=True)
class Placement:
    """The outcome of one scheduling pass."""

    bindings: tuple[tuple[Obj, str], ...]
    unschedulable: tuple[tuple[Obj, str], ...]
    gated: tuple[Obj, ...]


def _occupies(pod: Mapping[str, Any]) -> bool:
    return bool(node_name_of(pod)) and not is_terminal(pod)


def _pending(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    return (
        not spec.get("nodeName")
        and not meta(pod).get("deletionTimestamp")
        and not is_terminal(pod)
        and spec.get("schedulerName", SCHEDULER_NAME) == SCHEDULER_NAME
    )


def _consumes(pod: Mapping[str, Any]) -> str:
    notes = annotations_of(pod)
    for key in CONSUME_ANNOTATIONS:
        if notes.get(key):
            return f"{meta(pod).get('namespace', '')}/{notes[key]}"
    return ""


class _Cluster:
    def __init__(self, nodes: Sequence[Obj], bound: Sequence[Obj]) -> None:
        self.nodes = sorted((_node_state(n) for n in nodes), key=lambda s: s.name)
        self.by_name = {s.name: s for s in self.nodes}
        self.anti: list[tuple[_Term, _NodeState]] = []
        self.booked = {s.booked for s in self.nodes} - {""}
        for pod in bound:
            if _occupies(pod) and node_name_of(pod) in self.by_name:
                self._add(pod, self.by_name[node_name_of(pod)])

    def _add(self, pod: Obj, state: _NodeState) -> None:
        state.pods.append(pod)
        # Existing pods' anti-affinity is checked for every candidate: keep just those pods.
        self.anti.extend((term, state) for term in _terms(pod, "podAntiAffinity"))
        for name, amount in pod_requests(pod.get("spec") or {}).items():
            state.free[name] = state.free.get(name, 0) - amount
        state.free["pods"] = state.free.get("pods", 0) - 1

    def bind(self, pod: Obj, state: _NodeState) -> None:
        placed = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": state.name}}
        self._add(placed, state)

    def _domains(self, term: _Term) -> frozenset[str]:
        """Values of ``term``'s topology key on nodes running a pod the term selects."""
        return frozenset(
            s.labels[term.topology_key]
            for s in self.nodes
            if term.topology_key in s.labels and any(term.selects(p) for p in s.pods)
        )

    def candidate(self, pod: Obj) -> _Candidate:
        spec = pod.get("spec") or {}
        tolerations = parse_tolerations(spec.get("tolerations"))
        wants = _consumes(pod)
        if wants:
            # GKE lets pods that consume a ProvisioningRequest onto queued-provisioning nodes.
            tolerations += (Toleration(QUEUED_TAINT, "Exists"),)
        shunned = frozenset(
            (term.topology_key, domain)
            for term in _terms(pod, "podAntiAffinity")
            for domain in self._domains(term)
        )
        shunned_by_others = frozenset(
            (term.topology_key, state.labels[term.topology_key])
            for term, state in self.anti
            if term.topology_key in state.labels and term.selects(pod)
        )
        terms = _terms(pod, "podAffinity")
        affinity = tuple((t.topology_key, self._domains(t)) for t in terms)
        # kube-scheduler lets the first pod of a group in when nothing matches yet and the pod
        # matches its own terms; otherwise no self-affine group could ever start.
        bootstrap = all(not d for _, d in affinity) and all(t.selects(pod) for t in terms)
        return _Candidate(
            pod=pod,
            requests=pod_requests(spec),
            tolerations=tolerations,
            # A request without nodes of its own (check-capacity) is served by unbooked nodes.
            wants=wants if wants in self.booked else "",
            shunned_by_others=shunned_by_others,
            shunned=shunned,
            affinity=affinity,
            bootstrap=bootstrap,
        )

    def failure(self, c: _Candidate, state: _NodeState) -> list[str]:
        """Why the candidate cannot go to ``state``'s node; empty when it fits."""
        if (state.node.get("spec") or {}).get("unschedulable") and not any(
            t.tolerates(_CORDON) for t in c.tolerations
        ):
            return ["node(s) were unschedulable"]
        for taint in state.taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not any(
                t.tolerates(taint) for t in c.tolerations
            ):
                return [f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"]
        if not state.ready:
            return ["node(s) were not ready"]
        if not matches_node(c.pod.get("spec") or {}, state.name, state.labels):
            return ["node(s) didn't match Pod's node affinity/selector"]
        if state.booked != c.wants:
            return [
                "node(s) were not provisioned for the pod's ProvisioningRequest"
                if c.wants
                else "node(s) were booked by a ProvisioningRequest"
            ]
        if state.free.get("pods", 0) < 1:
            return ["Too many pods"]
        order = ["cpu", "memory", *sorted(set(c.requests) - {"cpu", "memory"})]
        insufficient = [
            f"Insufficient {name}"
            for name in order
            if c.requests.get(name, 0) > 0 and c.requests[name] > state.free.get(name, 0)
        ]
        if insufficient:
            return insufficient
        return self._pod_affinity(c, state)

    @staticmethod
    def _pod_affinity(c: _Candidate, state: _NodeState) -> list[str]:
        if any(state.labels.get(key) == value for key, value in c.shunned_by_others):
            return ["node(s) didn't satisfy existing pods anti-affinity rules"]
        for key, domains in c.affinity:
            domain = state.labels.get(key)
            if domain is None or not (c.bootstrap or domain in domains):
                return ["node(s) didn't match pod affinity rules"]
        if any(state.labels.get(key) == value for key, value in c.shunned):
            return ["node(s) didn't match pod anti-affinity rules"]
        return []

    @staticmethod
    def score(c: _Candidate, state: _NodeState) -> float:
        """LeastAllocated on cpu and memory, like the default NodeResourcesFit scoring."""
        parts = []
        for name in ("cpu", "memory"):
            if state.allocatable.get(name):
                left = state.free.get(name, 0) - c.requests.get(name, 0)
                parts.append(max(left, 0) / state.allocatable[name])
        return sum(parts) / len(parts) if parts else 0.0


def _queue_key(pod: Mapping[str, Any]) -> tuple[int, str, str, str]:
    spec = pod.get("spec") or {}
    m = meta(pod)
    return (
        -int(spec.get("priority") or 0),
        str(m.get("creationTimestamp", "")),
        str(m.get("namespace", "")),
        str(m.get("name", "")),
    )


def _message(reasons: Counter[str], total: int) -> str:
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return (
        f"0/{total} nodes are available: {', '.join(parts)}. preemption: 0/{total} nodes are "
        f"available: {total} Preemption is not helpful for scheduling."
    )


def place(pods: Sequence[Obj], nodes: Sequence[Obj]) -> Placement:
    """Decide where every schedulable pending pod in ``pods`` goes, in queue order."""
    cluster = _Cluster(nodes, pods)
    bindings: list[tuple[Obj, str]] = []
    failed: list[tuple[Obj, str]] = []
    gated: list[Obj] = []
    for pod in sorted((p for p in pods if _pending(p)), key=_queue_key):
        if (pod.get("spec") or {}).get("schedulingGates"):
            gated.append(pod)
            continue
        reasons: Counter[str] = Counter()
        fits = []
        candidate = cluster.candidate(pod)
        for state in cluster.nodes:
            why = cluster.failure(candidate, state)
            reasons.update(why)
            if not why:
                fits.append(state)
        if not fits:
            failed.append((pod, _message(reasons, len(cluster.nodes))))
            continue
        best = min(fits, key=lambda s: (-cluster.score(candidate, s), s.name))
        cluster.bind(pod, best)
        bindings.append((pod, best.name))
    return Placement(tuple(bindings), tuple(failed), tuple(gated))


def _scheduled_condition(reason: str, message: str, now: datetime) -> Obj:
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": rfc3339(now),
    }


def _with_condition(pod: Mapping[str, Any], cond: Obj) -> list[Obj]:
    others = [
        c for c in (pod.get("status") or {}).get("conditions") or () if c["type"] != cond["type"]
    ]
    return [*others, cond]


def schedule(pods: Sequence[Obj], nodes: Sequence[Obj], now: datetime) -> list[Action]:
    """One scheduling pass over all ``pods``: Bindings for placed pods, status for the rest.

    A pod whose PodScheduled condition already says the same thing gets no new action, so the
    pass is idempotent (kube-scheduler would re-emit FailedScheduling on every retry).
    """
    placement = place(pods, nodes)
    actions: list[Action] = []
    for pod, node in placement.bindings:
        ns, name = str(meta(pod)["namespace"]), str(meta(pod)["name"])
        actions.append(
            Create(
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name, "namespace": ns, "uid": meta(pod).get("uid")},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                }
            )
        )
        actions.append(
            Event(Ref.of(pod), "Scheduled", f"Successfully assigned {ns}/{name} to {node}",
                  source=SCHEDULER_NAME)
        )  # fmt: skip
    for pod, message in placement.unschedulable:
        actions.extend(_unschedulable(pod, "Unschedulable", message, now))
    for pod in placement.gated:
        actions.extend(_unschedulable(pod, "SchedulingGated", GATED_MESSAGE, now))
    return actions


def _unschedulable(pod: Obj, reason: str, message: str, now: datetime) -> list[Action]:
    current = condition(pod, "PodScheduled")
    if current and current.get("reason") == reason and current.get("message") == message:
        return []
    cond = _scheduled_condition(reason, message, now)
    out: list[Action] = [
        Patch(Ref.of(pod), {"status": {"conditions": _with_condition(pod, cond)}}, "status")
    ]
    if reason == "Unschedulable":
        out.append(Event(Ref.of(pod), "FailedScheduling", message, "Warning", SCHEDULER_NAME))
    return out
