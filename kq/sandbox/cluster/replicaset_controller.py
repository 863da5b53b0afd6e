"""ReplicaSet (apps/v1) controller: keep ``spec.replicas`` pods alive, and report on them.

As kube-controller-manager's: pods are ``<replicaset>-<5 characters>`` (generateName), carry the
template's labels and a controller reference; a pod that finished or is being deleted no longer
counts, so a replacement is created at once (finished pods stay for the pod GC, as upstream).
Scaling down deletes the pods cheapest to lose first: unscheduled, then not running, then not
ready, then the youngest. Simplifications: every missing pod is created in one pass (upstream
creates in slow-start batches), and pods are never adopted or released by selector: ownership
is the controller reference only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kq.sandbox.cluster.actions import Action, Create, Delete, Event, Obj, Ref, meta, owned_by
from kq.sandbox.cluster.apps import (
    InvalidSpec,
    active,
    available,
    int_field,
    running_ready,
    serving_pod,
    status_patch,
)
from kq.sandbox.cluster.names import suffix
from kq.sandbox.cluster.podinfo import labels_of, node_name_of, phase

SOURCE = "replicaset-controller"


def _pod_name(rs: Mapping[str, Any], taken: set[str], now: datetime) -> str:
    """``generateName``'s pick. Seeded by the time too, so a replacement never takes the name of
    the pod it replaces; a surplus left by a lost create answer is scaled down again."""
    prefix, uid = str(meta(rs)["name"]), str(meta(rs).get("uid", ""))
    serial = len(taken)
    while True:
        name = f"{prefix}-{suffix(f'{uid}/{now.isoformat()}/{serial}')}"
        if name not in taken:
            taken.add(name)
            return name
        serial += 1


def _deletion_rank(pod: Mapping[str, Any]) -> tuple[bool, bool, bool, str, str]:
    """Cheapest to lose first (upstream's ``ActivePods`` order, without the restart counts)."""
    created = str(meta(pod).get("creationTimestamp") or "")
    return (
        bool(node_name_of(pod)),
        phase(pod) == "Running",
        running_ready(pod),
        "".join(chr(0x10FFFF - ord(c)) for c in created),  # the youngest first
        str(meta(pod)["name"]),
    )


def reconcile_replicaset(rs: Obj, pods: Sequence[Obj], now: datetime) -> list[Action]:
    """One level-triggered pass over a ReplicaSet and the pods it controls."""
    if meta(rs).get("deletionTimestamp"):
        return []
    spec = rs.get("spec") or {}
    try:
        want = int_field(spec, "replicas", 1)
        min_ready = int_field(spec, "minReadySeconds", 0)
    except InvalidSpec as exc:
        return [Event(Ref.of(rs), "InvalidSpec", str(exc), "Warning", SOURCE)]
    mine = [p for p in pods if owned_by(p, str(meta(rs).get("uid", "")))]
    alive = [p for p in mine if active(p)]
    actions: list[Action] = []
    taken = {str(meta(p)["name"]) for p in mine}
    template = spec.get("template") or {}
    for _ in range(want - len(alive)):
        pod = serving_pod(rs, template, _pod_name(rs, taken, now))
        actions.append(Create(pod))
        actions.append(Event(Ref.of(rs), "SuccessfulCreate",
                             f"Created pod: {pod['metadata']['name']}", source=SOURCE))  # fmt: skip
    for pod in sorted(alive, key=_deletion_rank)[: max(len(alive) - want, 0)]:
        actions.append(Delete(Ref.of(pod)))
        actions.append(Event(Ref.of(rs), "SuccessfulDelete",
                             f"Deleted pod: {meta(pod)['name']}", source=SOURCE))  # fmt: skip
    template_labels = (template.get("metadata") or {}).get("labels") or {}
    status = {
        "replicas": len(alive),
        "fullyLabeledReplicas": sum(
            1 for p in alive if all(labels_of(p).get(k) == v for k, v in template_labels.items())
        ),
        "readyReplicas": sum(1 for p in alive if running_ready(p)),
        "availableReplicas": sum(1 for p in alive if available(p, min_ready, now)),
        "observedGeneration": meta(rs).get("generation"),
    }
    return status_patch(rs, status) + actions
