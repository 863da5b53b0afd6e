"""A fake kubelet: drives bound pods Pending → Running → Succeeded/Failed on sandbox time.

How long a container runs, first rule that applies:
1. the pod's ``kq.dev/run-seconds`` annotation (set it on a Job's or JobSet's pod template);
2. a trailing ``sleep N`` in a container's command/args, or the ``sleep`` image's argument
   (the longest container wins);
3. the profile's ``defaultRunSeconds`` (5 s unless the profile says otherwise).
Exit codes come from ``kq.dev/exit-code``.

A node whose Ready condition is Unknown has no kubelet: its pods stay as they were (what the
taint manager then does is ``eviction``'s business). On a NotReady node the kubelet still runs
its pods' containers but starts no new ones. A pod being deleted is stopped and removed even on
a node without a kubelet, where kube would leave it Terminating until the node came back or was
deleted: the sandbox stands in for that repair so that Jobs see their pods fail.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kq.api.podrequests import pod_requests
from kq.sandbox.cluster import readiness
from kq.sandbox.cluster.actions import Action, Delete, Event, Obj, Patch, Ref, meta
from kq.sandbox.cluster.clock import parse_rfc3339, rfc3339
from kq.sandbox.cluster.podinfo import (
    annotations_of,
    condition,
    is_terminal,
    node_name_of,
    phase,
    ready_status,
)

RUN_SECONDS_ANNOTATION = "kq.dev/run-seconds"
EXIT_CODE_ANNOTATION = "kq.dev/exit-code"
DEFAULT_RUN_SECONDS = 5.0
UNTIL_DELETED_SECONDS = 10 * 365 * 86400
"""The run time of a server process (a Ray node, an MPI worker's sshd): it never exits itself."""
_SLEEP = re.compile(r"(?:^|[\s;&|(])sleep\s+(\d+(?:\.\d+)?)([smhd]?)\s*\)?\s*$")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def run_seconds(pod: Mapping[str, Any], default: float = DEFAULT_RUN_SECONDS) -> float:
    """How long the pod's containers run once started (``default``: nothing declares it)."""
    declared = annotations_of(pod).get(RUN_SECONDS_ANNOTATION)
    if declared is not None:
        try:
            return max(float(declared), 0.0)
        except ValueError:
            pass
    found = [_container_seconds(c) for c in (pod.get("spec") or {}).get("containers") or ()]
    known = [s for s in found if s is not None]
    return max(known) if known else default


def until_deleted(template: Mapping[str, Any]) -> Obj:
    """A copy of pod ``template`` that runs until deleted, unless it declares its own run time.

    Why: a server container that the test author gave no ``sleep`` or annotation would otherwise
    exit after the default run time and be restarted over and over.
    """
    out = copy.deepcopy(dict(template))
    tmeta = out.setdefault("metadata", {})
    declared = any(
        _container_seconds(c) is not None for c in (out.get("spec") or {}).get("containers") or ()
    )
    if RUN_SECONDS_ANNOTATION not in (tmeta.get("annotations") or {}) and not declared:
        tmeta["annotations"] = {**(tmeta.get("annotations") or {}),
                                RUN_SECONDS_ANNOTATION: str(UNTIL_DELETED_SECONDS)}  # fmt: skip
    return out


def _container_seconds(container: Mapping[str, Any]) -> float | None:
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    match = _SLEEP.search(" ".join(words).strip())
    if match:
        return float(match[1]) * _UNIT[match[2]]
    image = str(container.get("image", "")).rsplit("/", 1)[-1]
    if image.split(":")[0] == "sleep" and words:
        plain = _DURATION.match(words[0])
        if plain:
            return float(plain[1]) * _UNIT[plain[2]]
    return None


def exit_code(pod: Mapping[str, Any]) -> int:
    try:
        return int(annotations_of(pod).get(EXIT_CODE_ANNOTATION, "0"))
    except ValueError:
        return 1


def _hash(text: str) -> bytes:
    return hashlib.sha1(text.encode()).digest()


def _pod_ip(pod: Mapping[str, Any]) -> str:
    digest = _hash(f"{meta(pod).get('namespace')}/{meta(pod).get('name')}/{meta(pod).get('uid')}")
    return f"10.64.{digest[0]}.{digest[1] % 250 + 2}"


def _container_id(pod: Mapping[str, Any], name: str) -> str:
    return "containerd://" + hashlib.sha256(f"{meta(pod).get('uid')}/{name}".encode()).hexdigest()


def _cond(type_: str, status: str, stamp: str, reason: str = "") -> Obj:
    cond: Obj = {"type": type_, "status": status, "lastProbeTime": None}
    cond["lastTransitionTime"] = stamp
    if reason:
        cond["reason"] = reason
    return cond


def _node_ip(node: Mapping[str, Any] | None) -> str:
    for address in ((node or {}).get("status") or {}).get("addresses") or ():
        if address.get("type") == "InternalIP":
            return str(address["address"])
    return ""


def _qos(pod: Mapping[str, Any]) -> str:
    containers = (pod.get("spec") or {}).get("containers") or ()
    # QoS looks at cpu and memory only: a pod asking for nothing but TPUs is BestEffort.
    if not set(pod_requests(pod.get("spec") or {})) & {"cpu", "memory"}:
        return "BestEffort"
    for c in containers:
        res = c.get("resources") or {}
        limits = res.get("limits") or {}
        requests = {**limits, **(res.get("requests") or {})}
        if any(k not in limits or str(limits[k]) != str(requests[k]) for k in ("cpu", "memory")):
            return "Burstable"
    return "Guaranteed"


def _start(pod: Obj, node: Mapping[str, Any] | None, now: datetime) -> list[Action]:
    stamp = rfc3339(now)
    ref = Ref.of(pod)
    conditions = (pod.get("status") or {}).get("conditions") or ()
    scheduled = next(
        (c for c in conditions if c["type"] == "PodScheduled"), _cond("PodScheduled", "True", stamp)
    )
    statuses = []
    events: list[Action] = []
    for container in (pod.get("spec") or {}).get("containers") or ():
        name, image = str(container["name"]), str(container.get("image", ""))
        statuses.append(
            {"name": name, "image": image, "imageID": f"{image}@sha256:{_hash(image).hex()}",
             "containerID": _container_id(pod, name), "ready": True, "started": True,
             "restartCount": 0, "state": {"running": {"startedAt": stamp}}, "lastState": {}}
        )  # fmt: skip
        events += [
            Event(ref, "Pulled", f'Container image "{image}" already present on machine',
                  source="kubelet"),
            Event(ref, "Created", f"Created container: {name}", source="kubelet"),
            Event(ref, "Started", f"Started container {name}", source="kubelet"),
        ]  # fmt: skip
    host_ip, pod_ip = _node_ip(node), _pod_ip(pod)
    status = {
        "phase": "Running",
        "conditions": [
            _cond("PodReadyToStartContainers", "True", stamp),
            _cond("Initialized", "True", stamp),
            _cond("Ready", "True", stamp),
            _cond("ContainersReady", "True", stamp),
            scheduled,
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": stamp,
        "containerStatuses": statuses,
        "qosClass": _qos(pod),
    }
    if readiness.delay(pod) > 0:
        readiness.not_ready_yet(status)
    return [Patch(ref, {"status": status}, "status"), *events]


def _terminated_status(pod: Mapping[str, Any], code: int, now: datetime) -> Obj:
    """Status with every container terminated: Succeeded on exit code 0, else Failed."""
    stamp = rfc3339(now)
    statuses = []
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        started = ((status.get("state") or {}).get("running") or {}).get("startedAt", stamp)
        word = "Completed" if code == 0 else "Error"
        statuses.append(
            {**status, "ready": False, "started": False,
             "state": {"terminated": {"exitCode": code, "reason": word, "startedAt": started,
                                      "finishedAt": stamp,
                                      "containerID": status.get("containerID", "")}}}
        )  # fmt: skip
    succeeded = code == 0
    why = "PodCompleted" if succeeded else "PodFailed"
    kept = [
        c
        for c in (pod.get("status") or {}).get("conditions") or ()
        if c["type"] not in ("Ready", "ContainersReady", "PodReadyToStartContainers")
    ]
    return {
        "phase": "Succeeded" if succeeded else "Failed",
        "conditions": [
            _cond("PodReadyToStartContainers", "False", stamp),
            *kept,
            _cond("Ready", "False", stamp, why),
            _cond("ContainersReady", "False", stamp, why),
        ],
        "containerStatuses": statuses,
    }


def _terminate(pod: Obj, now: datetime) -> list[Action]:
    """Graceful deletion: stop containers (137), then delete the object for good."""
    ref = Ref.of(pod)
    actions: list[Action] = []
    if not is_terminal(pod):
        actions.append(Patch(ref, {"status": _terminated_status(pod, 137, now)}, "status"))
        actions += [
            Event(ref, "Killing", f"Stopping container {c['name']}", source="kubelet")
            for c in (pod.get("spec") or {}).get("containers") or ()
        ]
    return [*actions, Delete(ref, grace_period_seconds=0)]


def _deadline(pod: Mapping[str, Any], default: float) -> datetime | None:
    """When the containers' current run ends (a restarted container starts a new run)."""
    status = pod.get("status") or {}
    starts = [
        ((c.get("state") or {}).get("running") or {}).get("startedAt")
        for c in status.get("containerStatuses") or ()
    ]
    start = max((s for s in starts if s), default=status.get("startTime"))
    if phase(pod) != "Running" or not start:
        return None
    return parse_rfc3339(str(start)) + timedelta(seconds=run_seconds(pod, default))


def _restarts(pod: Mapping[str, Any], code: int) -> bool:
    """Whether the kubelet restarts the containers in place instead of ending the pod."""
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    return policy == "Always" or (policy == "OnFailure" and code != 0)


def _restart(pod: Obj, code: int, now: datetime) -> list[Action]:
    """Run the containers again, keeping the last run in ``lastState`` (no crash-loop delay)."""
    stamp = rfc3339(now)
    statuses = []
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        started = ((status.get("state") or {}).get("running") or {}).get("startedAt", stamp)
        last = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                "startedAt": started, "finishedAt": stamp,
                "containerID": status.get("containerID", "")}  # fmt: skip
        statuses.append({**status, "restartCount": int(status.get("restartCount") or 0) + 1,
                         "lastState": {"terminated": last},
                         "state": {"running": {"startedAt": stamp}}})  # fmt: skip
    ref = Ref.of(pod)
    return [
        Patch(ref, {"status": {"containerStatuses": statuses}}, "status"),
        *(Event(ref, "Started", f"Started container {s['name']}", source="kubelet")
          for s in statuses),
    ]  # fmt: skip


def reconcile_pods(
    pods: Sequence[Obj],
    nodes: Sequence[Obj],
    now: datetime,
    default_run_seconds: float = DEFAULT_RUN_SECONDS,
) -> list[Action]:
    """Advance every bound pod one step towards where sandbox time says it should be."""
    by_name = {str(meta(n)["name"]): n for n in nodes}
    actions: list[Action] = []
    for pod in sorted(pods, key=lambda p: (meta(p).get("namespace", ""), meta(p)["name"])):
        node = by_name.get(node_name_of(pod))
        if node is None:
            continue  # unbound, or its node is gone (pod GC's business)
        if meta(pod).get("deletionTimestamp"):
            if meta(pod).get("deletionGracePeriodSeconds") != 0:
                actions += _terminate(pod, now)
        elif is_terminal(pod) or ready_status(node) == "Unknown":
            continue  # finished, or no kubelet to move it on
        elif phase(pod) == "Pending":
            if ready_status(node) == "True":
                actions += _start(pod, node, now)
        else:
            actions += _run(pod, now, default_run_seconds) or _ready_again(pod, node, now)
    return actions


def _ready_again(pod: Obj, node: Mapping[str, Any], now: datetime) -> list[Action]:
    """A node back from a failure: its kubelet reports the running pod Ready again (the node
    lifecycle controller had marked it not ready); or a serving pod passes its readiness check."""
    ready = condition(pod, "Ready")
    if ready_status(node) != "True" or ready is None or ready.get("status") != "False":
        return []
    if not readiness.due(pod, now):
        return []
    status = pod.get("status") or {}
    conditions = [_cond(c["type"], "True", rfc3339(now))
                  if c["type"] in ("Ready", "ContainersReady") and c.get("status") != "True"
                  else c for c in status.get("conditions") or ()]  # fmt: skip
    containers = [{**c, "ready": True} for c in status.get("containerStatuses") or ()]
    patch = {"conditions": conditions, "containerStatuses": containers or None}
    return [Patch(Ref.of(pod), {"status": patch}, "status")]


def _run(pod: Obj, now: datetime, default_run_seconds: float) -> list[Action]:
    """End or restart the containers once their run time is up."""
    deadline = _deadline(pod, default_run_seconds)
    if deadline is None or now < deadline:
        return []
    code = exit_code(pod)
    if _restarts(pod, code):
        return _restart(pod, code, now)
    return [Patch(Ref.of(pod), {"status": _terminated_status(pod, code, now)}, "status")]


def next_wakeup(
    pods: Sequence[Obj], default_run_seconds: float = DEFAULT_RUN_SECONDS
) -> datetime | None:
    """When the earliest running pod finishes: the driver's next reason to reconcile."""
    live = [p for p in pods if not meta(p).get("deletionTimestamp")]
    deadlines = [_deadline(p, default_run_seconds) for p in live]
    unready = (p for p in live if phase(p) == "Running" and ready_status(p) != "True")
    deadlines += [readiness.ready_at(p) for p in unready]
    return min((d for d in deadlines if d is not None), default=None)
