"""Server-side Tables for ``kubectl get``: CRD printer columns and built-in printers."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kq.sandbox.apiserver.jsonpath import JsonPathError, evaluate
from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.store import Obj

Column = tuple[str, str, int]  # name, type, priority
Printer = Callable[[Obj], list[Any]]


def human_duration(seconds: float) -> str:
    """Kubernetes' short human duration (``5s``, ``3m2s``, ``4h``, ``2d3h``, ``1y5d``)."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    return f"{years}y{days % 365}d" if days % 365 else f"{years}y"


def age(timestamp: Any) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        when = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - when).total_seconds())


def _meta_age(obj: Obj) -> str:
    return age(obj.get("metadata", {}).get("creationTimestamp"))


def _pod(obj: Obj) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    gates = spec.get("readinessGates") or []
    return [
        obj["metadata"]["name"],
        f"{sum(1 for c in statuses if c.get('ready'))}/{len(spec.get('containers') or [])}",
        _pod_reason(obj, status),
        str(sum(int(c.get("restartCount") or 0) for c in statuses)),
        _meta_age(obj),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"{len(gates)}/{len(gates)}" if gates else "<none>",
    ]


def _pod_reason(obj: Obj, status: Obj) -> Any:
    """The STATUS column, as kubectl prints it: the pod's reason or phase, overridden by a
    scheduling gate, then by each container's waiting or terminated reason (the last wins),
    then by Terminating for a pod being deleted that has not finished."""
    reason = status.get("reason") or status.get("phase") or "Pending"
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    for c in status.get("containerStatuses") or []:
        reason = _container_reason(c.get("state") or {}) or reason
    if obj["metadata"].get("deletionTimestamp") and reason not in ("Succeeded", "Failed"):
        reason = "Terminating"
    return reason


def _container_reason(state: Obj) -> Any:
    """A container's waiting or terminated reason, None when it has neither."""
    if (state.get("waiting") or {}).get("reason"):
        return state["waiting"]["reason"]
    if "terminated" not in state:
        return None
    term = state["terminated"]
    if term.get("signal"):
        return term.get("reason") or f"Signal:{term['signal']}"
    return term.get("reason") or f"ExitCode:{term.get('exitCode', 0)}"


def _job(obj: Obj) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
    if conditions.get("Complete") == "True":
        state = "Complete"
    elif conditions.get("Failed") == "True":
        state = "Failed"
    elif conditions.get("Suspended") == "True":
        state = "Suspended"
    elif conditions.get("FailureTarget") == "True":
        state = "FailureTarget"
    else:
        state = "Running"
    completions = spec.get("completions")
    done = f"{status.get('succeeded', 0)}/{completions if completions is not None else 1}"
    duration = ""
    if status.get("startTime"):
        start = datetime.strptime(status["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        end = datetime.now(UTC)
        if status.get("completionTime"):
            end = datetime.strptime(status["completionTime"], "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=UTC
            )
        duration = human_duration((end - start).total_seconds())
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    containers = pod_spec.get("containers") or []
    labels = (spec.get("selector") or {}).get("matchLabels") or {}
    return [
        obj["metadata"]["name"],
        state,
        done,
        duration,
        _meta_age(obj),
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
    ]


def _node(obj: Obj) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ready = "Unknown"
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            ready = "Ready" if cond.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        ready += ",SchedulingDisabled"
    labels = obj["metadata"].get("labels") or {}
    roles = sorted(
        k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k
    )
    info = status.get("nodeInfo") or {}
    ip = next(
        (a.get("address") for a in status.get("addresses") or () if a.get("type") == "InternalIP"),
        "<none>",
    )
    return [
        obj["metadata"]["name"],
        ready,
        ",".join(roles) or "<none>",
        _meta_age(obj),
        info.get("kubeletVersion", ""),
        ip,
    ]


def _event(obj: Obj) -> list[Any]:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    last = (
        obj.get("lastTimestamp") or obj.get("eventTime") or obj["metadata"].get("creationTimestamp")
    )
    return [
        age(last if isinstance(last, str) else None),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        obj.get("message") or obj.get("note") or "",
    ]


_NAME: Column = ("Name", "string", 0)
_AGE: Column = ("Age", "string", 0)
BUILTIN: dict[tuple[str, str], tuple[list[Column], Printer]] = {
    ("", "Pod"): (
        [
            _NAME,
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            _AGE,
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        _pod,
    ),
    ("batch", "Job"): (
        [
            _NAME,
            ("Status", "string", 0),
            ("Completions", "string", 0),
            ("Duration", "string", 0),
            _AGE,
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ],
        _job,
    ),
    ("", "Node"): (
        [
            _NAME,
            ("Status", "string", 0),
            ("Roles", "string", 0),
            _AGE,
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
        ],
        _node,
    ),
    ("", "Namespace"): (
        [_NAME, ("Status", "string", 0), _AGE],
        lambda o: [o["metadata"]["name"], (o.get("status") or {}).get("phase", ""), _meta_age(o)],
    ),
    ("", "Event"): (
        [
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Message", "string", 0),
        ],
        _event,
    ),
    ("", "ConfigMap"): (
        [_NAME, ("Data", "integer", 0), _AGE],
        lambda o: [
            o["metadata"]["name"],
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            _meta_age(o),
        ],
    ),
    ("", "Secret"): (
        [_NAME, ("Type", "string", 0), ("Data", "integer", 0), _AGE],
        lambda o: [
            o["metadata"]["name"],
            o.get("type", ""),
            len(o.get("data") or {}),
            _meta_age(o),
        ],
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (
        [_NAME, ("Created At", "date", 0)],
        lambda o: [o["metadata"]["name"], o["metadata"].get("creationTimestamp")],
    ),
    ("scheduling.k8s.io", "PriorityClass"): (
        [_NAME, ("Value", "integer", 0), ("Global-Default", "boolean", 0), _AGE],
        lambda o: [
            o["metadata"]["name"],
            o.get("value", 0),
            bool(o.get("globalDefault")),
            _meta_age(o),
        ],
    ),
    ("apps", "Deployment"): (
        [
            _NAME,
            ("Ready", "string", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            _AGE,
        ],
        lambda o: [
            o["metadata"]["name"],
            f"{(o.get('status') or {}).get('readyReplicas', 0)}/"
            f"{(o.get('spec') or {}).get('replicas', 1)}",
            (o.get("status") or {}).get("updatedReplicas", 0),
            (o.get("status") or {}).get("availableReplicas", 0),
            _meta_age(o),
        ],
    ),
}
BUILTIN[("events.k8s.io", "Event")] = BUILTIN[("", "Event")]


def _cell(column: Any, obj: Obj) -> Any:
    try:
        values = evaluate(str(column.get("jsonPath", "")), obj)
    except JsonPathError:
        return None
    if not values:
        return None
    value = values[0]
    kind = column.get("type", "string")
    if kind == "date":
        return age(value)
    if kind in ("integer", "number", "boolean"):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def columns(rt: ResourceType) -> tuple[list[dict[str, Any]], Printer]:
    """Column definitions and the row printer for ``rt``."""
    if rt.builtin:
        cols, printer = BUILTIN.get((rt.group, rt.kind), ([_NAME, _AGE], _name_age))
        return [_definition(*c) for c in cols], printer
    defined = list(rt.columns or ())
    if not defined:
        return [_definition(*_NAME), _definition("Age", "date", 0)], _name_age

    def custom(obj: Obj) -> list[Any]:
        return [obj["metadata"]["name"], *(_cell(c, obj) for c in defined)]

    defs = [_definition(*_NAME)] + [
        _definition(
            str(c.get("name", "")),
            str(c.get("type", "string")),
            int(c.get("priority", 0)),
            str(c.get("description", "")),
            str(c.get("format", "")),
        )
        for c in defined
    ]
    return defs, custom


def _name_age(obj: Obj) -> list[Any]:
    return [obj["metadata"]["name"], _meta_age(obj)]


def _definition(
    name: str, kind: str, priority: int, description: str = "", fmt: str = ""
) -> dict[str, Any]:
    if kind == "date":
        kind = "string"
    if name == "Name":
        fmt = "name"
        description = description or "Name must be unique within a namespace."
    return {
        "name": name,
        "type": kind,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


def partial_metadata(obj: Obj) -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(
    rt: ResourceType,
    items: list[Obj],
    resource_version: str,
    include: str = "Metadata",
    headers: bool = True,
    continue_token: str = "",
) -> Obj:
    """A ``meta.k8s.io/v1`` Table of ``items``."""
    defs, printer = columns(rt)
    rows = []
    for obj in items:
        row: Obj = {"cells": printer(obj)}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = partial_metadata(obj)
        rows.append(row)
    meta: Obj = {"resourceVersion": resource_version}
    if continue_token:
        meta["continue"] = continue_token
    out: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "rows": rows}
    if headers:
        out["columnDefinitions"] = defs
    else:
        out["columnDefinitions"] = None
    return out
