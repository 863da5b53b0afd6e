"""A simulated cluster autoscaler for ProvisioningRequests (autoscaling.x-k8s.io).

``queued-provisioning.gke.io`` (GKE DWS): after a delay, all nodes the request needs are created
at once, in one zone, in a queued-provisioning pool whose taints and labels the pod template fits;
the nodes are booked for the request (see ``PROVISIONING_REQUEST_ANNOTATION``) and removed when
the booking ends unused or ``maxRunDurationSeconds`` runs out.
``check-capacity.autoscaling.x-k8s.io``: existing capacity is checked, nothing is created.
Condition types and reasons follow the OSS autoscaler; ``CapacityRevoked`` with reason
``MaxRunDurationExceeded`` is this simulator's own, labelled choice for the end of a DWS run.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kq.sandbox.cluster.actions import Action, Create, Delete, Obj, Patch, Ref, meta
from kq.sandbox.cluster.clock import parse_rfc3339, rfc3339
from kq.sandbox.cluster.nodes import PROVISIONING_REQUEST_ANNOTATION, make_node
from kq.sandbox.cluster.podinfo import annotations_of, condition, is_terminal, node_name_of
from kq.sandbox.cluster.profiles import NodePool, Profile
from kq.sandbox.cluster.scheduling import CONSUME_ANNOTATIONS, place

QUEUED = "queued-provisioning.gke.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"


@dataclass(frozen=True, slots=True)
class AutoscalerConfig:
    provisioning_delay_seconds: float = 30.0
    booking_seconds: float = 600.0
    expiry_seconds: float = 7 * 86400.0
    default_max_run_seconds: float = 604800.0


def _key(request: Mapping[str, Any]) -> str:
    return f"{meta(request).get('namespace', '')}/{meta(request)['name']}"


def _since(cond: Mapping[str, Any] | None, now: datetime) -> float:
    if not cond or not cond.get("lastTransitionTime"):
        return 0.0
    return (now - parse_rfc3339(str(cond["lastTransitionTime"]))).total_seconds()


def _true(obj: Mapping[str, Any], type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"


class _Conditions:
    """The request's condition list, edited in place, written once if anything changed."""

    def __init__(self, request: Mapping[str, Any], now: datetime) -> None:
        self.items: list[Obj] = [
            dict(c) for c in (request.get("status") or {}).get("conditions") or ()
        ]
        self.changed = False
        self.now = now
        self.generation = int(meta(request).get("generation") or 1)

    def set(self, type_: str, status: str, reason: str, message: str) -> None:
        current = next((c for c in self.items if c["type"] == type_), {})
        if (current.get("status"), current.get("reason"), current.get("message")) == (
            status,
            reason,
            message,
        ):
            return
        stamp = current.get("lastTransitionTime")
        if current.get("status") != status:
            stamp = rfc3339(self.now)
        new = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "observedGeneration": self.generation,
            "lastTransitionTime": stamp,
        }
        self.items = [c for c in self.items if c["type"] != type_] + [new]
        self.changed = True


def _template_pods(
    request: Mapping[str, Any], templates: Mapping[tuple[str, str], Obj]
) -> list[Obj] | None:
    """A stand-in pod per requested pod; ``None`` when a PodTemplate is missing."""
    ns = str(meta(request).get("namespace", ""))
    pods: list[Obj] = []
    for i, pod_set in enumerate((request.get("spec") or {}).get("podSets") or ()):
        template = templates.get((ns, str((pod_set.get("podTemplateRef") or {}).get("name"))))
        if template is None:
            return None
        body = copy.deepcopy(template.get("template") or {})
        for j in range(int(pod_set.get("count") or 0)):
            notes = {
                **((body.get("metadata") or {}).get("annotations") or {}),
                CONSUME_ANNOTATIONS[0]: str(meta(request)["name"]),
            }
            pods.append(
                {
                    "metadata": {
                        "namespace": ns,
                        "name": f"{meta(request)['name']}-{i}-{j}",
                        "labels": (body.get("metadata") or {}).get("labels") or {},
                        "annotations": notes,
                    },
                    "spec": copy.deepcopy(body.get("spec") or {}),
                    "status": {"phase": "Pending"},
                }
            )
    return pods


def _next_index(pool: NodePool, nodes: Sequence[Obj]) -> int:
    prefix = f"gke-{pool.name}-"
    names = (str(meta(n)["name"]) for n in nodes)
    used = [
        int(n[len(prefix) :]) for n in names if n.startswith(prefix) and n[len(prefix) :].isdigit()
    ]
    return max(used, default=-1) + 1


def _new_nodes(
    request: Obj, pods: list[Obj], profile: Profile, nodes: Sequence[Obj], now: datetime
) -> list[Obj]:
    """The fewest nodes of one queued pool, in one zone, that host every pod; empty if none can."""
    for pool in profile.pools:
        if not pool.queued_provisioning:
            continue
        start = _next_index(pool, nodes)
        for count in range(1, len(pods) + 1):
            candidates = []
            for i in range(start, start + count):
                node = make_node(pool, i, region=profile.region, now=now)
                node["metadata"]["annotations"][PROVISIONING_REQUEST_ANNOTATION] = _key(request)
                candidates.append(node)
            if len(place(pods, candidates).bindings) == len(pods):
                return candidates
    return []


def _consumers(request: Mapping[str, Any], pods: Sequence[Obj]) -> list[Obj]:
    ns, name = str(meta(request).get("namespace", "")), str(meta(request)["name"])
    return [
        p
        for p in pods
        if meta(p).get("namespace") == ns
        and not is_terminal(p)
        and any(annotations_of(p).get(k) == name for k in CONSUME_ANNOTATIONS)
    ]


def _booked_nodes(request: Mapping[str, Any], nodes: Sequence[Obj]) -> list[Obj]:
    key = _key(request)
    return [n for n in nodes if annotations_of(n).get(PROVISIONING_REQUEST_ANNOTATION) == key]


def _idle(node: Mapping[str, Any], pods: Sequence[Obj]) -> bool:
    name = meta(node)["name"]
    return not any(node_name_of(p) == name and not is_terminal(p) for p in pods)


def _wanted(request: Mapping[str, Any]) -> int:
    return sum(int(s.get("count") or 0) for s in (request.get("spec") or {}).get("podSets") or ())


def reconcile_provisioning(
    requests: Sequence[Obj],
    pod_templates: Sequence[Obj],
    nodes: Sequence[Obj],
    pods: Sequence[Obj],
    profile: Profile,
    now: datetime,
    config: AutoscalerConfig = AutoscalerConfig(),
) -> list[Action]:
    """One autoscaler pass over every ProvisioningRequest, in creation order."""
    templates = {
        (str(meta(t).get("namespace", "")), str(meta(t)["name"])): t for t in pod_templates
    }
    nodes = list(nodes)
    actions: list[Action] = []
    live = set()
    for request in sorted(
        requests, key=lambda r: (str(meta(r).get("creationTimestamp", "")), _key(r))
    ):
        live.add(_key(request))
        klass = (request.get("spec") or {}).get("provisioningClassName")
        conds = _Conditions(request, now)
        if klass in (QUEUED, CHECK_CAPACITY):
            created = _step(
                request, str(klass), conds, templates, nodes, pods, profile, config, actions
            )
        else:
            # A real autoscaler ignores classes it does not serve; saying so tells the user
            # what to fix (the ProvisioningRequestConfig's provisioningClassName).
            message = f"the sandbox's autoscaler serves {QUEUED} and {CHECK_CAPACITY}, not {klass}"
            conds.set("Accepted", "False", "UnsupportedProvisioningClass", message)
            created = []
        nodes += created
        if conds.changed:
            actions.insert(
                0, Patch(Ref.of(request), {"status": {"conditions": conds.items}}, "status")
            )
    for node in nodes:
        key = annotations_of(node).get(PROVISIONING_REQUEST_ANNOTATION)
        if key and key not in live and _idle(node, pods):
            actions.append(Delete(Ref.of(node)))
    return actions


def _step(
    request: Obj,
    klass: str,
    conds: _Conditions,
    templates: Mapping[tuple[str, str], Obj],
    nodes: Sequence[Obj],
    pods: Sequence[Obj],
    profile: Profile,
    config: AutoscalerConfig,
    actions: list[Action],
) -> list[Obj]:
    """Advance one request; returns the nodes it creates."""
    now = conds.now
    if any(_true(request, t) for t in ("Failed", "CapacityRevoked")):
        return []
    if _true(request, "Provisioned"):
        _hold(request, conds, nodes, pods, config, actions)
        return []
    if condition(request, "Accepted") is None:
        conds.set("Accepted", "True", "Accepted", "Provisioning Request was accepted")
    created = parse_rfc3339(str(meta(request).get("creationTimestamp") or rfc3339(now)))
    if (now - created).total_seconds() >= config.expiry_seconds:
        conds.set("Failed", "True", "Expired", "Provisioning Request was not provisioned in time")
        return []
    pods_wanted = _template_pods(request, templates)
    if pods_wanted is None:
        conds.set(
            "Provisioned", "False", "PodTemplateNotFound", "a referenced PodTemplate is missing"
        )
        return []
    if klass == CHECK_CAPACITY:
        _check_capacity(request, conds, pods_wanted, nodes, pods)
        return []
    if _since(condition(request, "Accepted"), now) < config.provisioning_delay_seconds:
        conds.set(
            "Provisioned", "False", "NotProvisioned", "Waiting for capacity; the request is queued"
        )
        return []
    new = _new_nodes(request, pods_wanted, profile, nodes, now)
    if not new:
        message = "No queued-provisioning node pool fits the pods. Expected time is indefinite."
        conds.set("Provisioned", "False", "ResourcePoolExhausted", message)
        return []
    actions.extend(Create(n) for n in new)
    zone = new[0]["metadata"]["labels"]["topology.kubernetes.io/zone"]
    conds.set(
        "Provisioned", "True", "CapacityIsProvisioned", f"Provisioned {len(new)} node(s) in {zone}"
    )
    return new


def _check_capacity(
    request: Obj, conds: _Conditions, wanted: list[Obj], nodes: Sequence[Obj], pods: Sequence[Obj]
) -> None:
    shared = [n for n in nodes if not annotations_of(n).get(PROVISIONING_REQUEST_ANNOTATION)]
    stand_ins = [{**p, "metadata": {**p["metadata"], "annotations": {}}} for p in wanted]
    placed = {id(pod) for pod, _ in place([*pods, *stand_ins], shared).bindings}
    if all(id(s) in placed for s in stand_ins):
        conds.set("Provisioned", "True", "CapacityIsFound", "Capacity is found in the cluster")
    elif (request.get("spec") or {}).get("parameters", {}).get("noRetry") == "true":
        conds.set(
            "Failed",
            "True",
            "CapacityIsNotFound",
            "Capacity is not found, CA will not try to find it again",
        )
    else:
        conds.set(
            "Provisioned",
            "False",
            "CapacityIsNotFound",
            "Capacity is not found, CA will try to find it later",
        )


def _hold(
    request: Obj,
    conds: _Conditions,
    nodes: Sequence[Obj],
    pods: Sequence[Obj],
    config: AutoscalerConfig,
    actions: list[Action],
) -> None:
    """Keep or end the booking, and end the run after ``maxRunDurationSeconds``."""
    now = conds.now
    provisioned_for = _since(condition(request, "Provisioned"), now)
    booked = _booked_nodes(request, nodes)
    params = (request.get("spec") or {}).get("parameters") or {}
    max_run = float(params.get("maxRunDurationSeconds") or config.default_max_run_seconds)
    if booked and provisioned_for >= max_run:
        actions.extend(Delete(Ref.of(n)) for n in booked)
        message = f"maxRunDurationSeconds ({int(max_run)}) elapsed; the nodes were reclaimed"
        conds.set("CapacityRevoked", "True", "MaxRunDurationExceeded", message)
        return
    if _true(request, "BookingExpired"):
        return
    scheduled = [p for p in _consumers(request, pods) if node_name_of(p)]
    if len(scheduled) >= _wanted(request):
        message = "Capacity booking ended: every pod of the request is scheduled"
        conds.set("BookingExpired", "True", "CapacityBookingConsumed", message)
    elif provisioned_for >= config.booking_seconds:
        conds.set(
            "BookingExpired",
            "True",
            "CapacityReservationTimeExpired",
            "Capacity reservation time expired",
        )
        actions.extend(Delete(Ref.of(n)) for n in booked if _idle(n, pods))


def next_wakeup(
    requests: Sequence[Obj], now: datetime, config: AutoscalerConfig = AutoscalerConfig()
) -> datetime | None:
    """The next instant after ``now`` at which time alone moves a request on."""
    moments = []
    for request in requests:
        if any(_true(request, t) for t in ("Failed", "CapacityRevoked")):
            continue
        params = (request.get("spec") or {}).get("parameters") or {}
        provisioned = condition(request, "Provisioned")
        accepted = condition(request, "Accepted")
        if _true(request, "Provisioned") and provisioned:
            start = parse_rfc3339(str(provisioned["lastTransitionTime"]))
            run = float(params.get("maxRunDurationSeconds") or config.default_max_run_seconds)
            moments.append(start + timedelta(seconds=run))
            if not _true(request, "BookingExpired"):
                moments.append(start + timedelta(seconds=config.booking_seconds))
            continue
        if accepted and accepted.get("lastTransitionTime"):
            start = parse_rfc3339(str(accepted["lastTransitionTime"]))
            moments.append(start + timedelta(seconds=config.provisioning_delay_seconds))
        created = meta(request).get("creationTimestamp")
        if created:
            moments.append(parse_rfc3339(str(created)) + timedelta(seconds=config.expiry_seconds))
    return min((m for m in moments if m > now), default=None)
