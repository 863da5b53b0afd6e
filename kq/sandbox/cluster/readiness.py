"""When a started pod turns Ready: serving pods pass their readiness check after a short delay.

A batch pod is Ready as soon as its containers start. A serving pod (controlled by a ReplicaSet
or a StatefulSet) starts not ready and turns Ready once its delay has passed, counted from the
pod's ``startTime``; the delay is, first rule that applies:
1. the pod's ``kq.dev/ready-seconds`` annotation;
2. the longest ``readinessProbe.initialDelaySeconds`` of its containers, when one has a probe;
3. :data:`SERVING_READY_SECONDS`.
Why: Deployment, StatefulSet and LeaderWorkerSet status (readyReplicas, Available) and
OrderedReady start-up all turn on readiness; without a delay no test could see them wait.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from kq.sandbox.cluster.actions import meta
from kq.sandbox.cluster.clock import parse_rfc3339
from kq.sandbox.cluster.podinfo import annotations_of

READY_SECONDS_ANNOTATION = "kq.dev/ready-seconds"
SERVING_READY_SECONDS = 2.0
_SERVING_OWNERS = ("ReplicaSet", "StatefulSet")


def _serving(pod: Mapping[str, Any]) -> bool:
    return any(
        ref.get("controller") and ref.get("kind") in _SERVING_OWNERS
        for ref in meta(pod).get("ownerReferences") or ()
    )


def delay(pod: Mapping[str, Any]) -> float:
    """Sandbox seconds from start to Ready (0: Ready at once)."""
    declared = annotations_of(pod).get(READY_SECONDS_ANNOTATION)
    if declared is not None:
        try:
            return max(float(declared), 0.0)
        except ValueError:
            pass  # a malformed annotation falls back to the rules below, as run-seconds does
    if not _serving(pod):
        return 0.0
    probes = [
        c["readinessProbe"]
        for c in (pod.get("spec") or {}).get("containers") or ()
        if isinstance(c.get("readinessProbe"), Mapping)
    ]
    if probes:
        return float(max(int(p.get("initialDelaySeconds") or 0) for p in probes))
    return SERVING_READY_SECONDS


def ready_at(pod: Mapping[str, Any]) -> datetime | None:
    """When a running pod that started not ready passes its check (``None``: no wait)."""
    start = (pod.get("status") or {}).get("startTime")
    wait = delay(pod)
    if not start or wait <= 0:
        return None
    return parse_rfc3339(str(start)) + timedelta(seconds=wait)


def due(pod: Mapping[str, Any], now: datetime) -> bool:
    moment = ready_at(pod)
    return moment is None or moment <= now


def not_ready_yet(status: dict[str, Any]) -> None:
    """Turn a just-started pod's status into the not-ready one the kubelet reports first."""
    names = [str(c["name"]) for c in status.get("containerStatuses") or ()]
    message = f"containers with unready status: [{' '.join(names)}]"
    for cond in status.get("conditions") or ():
        if cond["type"] in ("Ready", "ContainersReady"):
            cond.update(status="False", reason="ContainersNotReady", message=message)
    for container in status.get("containerStatuses") or ():
        container["ready"] = False
