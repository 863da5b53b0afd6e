"""Field-selector values per kind: only the fields a real server supports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kq.sandbox.apiserver.registry import ResourceType
from kq.sandbox.apiserver.store import Obj

_COMMON = ("metadata.name", "metadata.namespace")

# Fields whose missing value reads as "false" like a Go zero-value bool.
_BOOL_FIELDS = frozenset({"spec.hostNetwork", "spec.unschedulable"})

_BY_KIND: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): (
        "spec.nodeName",
        "spec.schedulerName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    ("", "Event"): (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    ("events.k8s.io", "Event"): (
        "regarding.kind",
        "regarding.namespace",
        "regarding.name",
        "regarding.uid",
        "reason",
        "reportingController",
        "type",
    ),
    ("", "Node"): ("spec.unschedulable",),
    ("", "Namespace"): ("status.phase",),
    ("", "Secret"): ("type",),
    ("batch", "Job"): ("status.successful",),
    ("", "ReplicationController"): ("status.replicas",),
}

_ALIASES = {("", "Event", "source"): "source.component"}


def _lookup(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def supported(rt: ResourceType) -> tuple[str, ...]:
    return (*_COMMON, *_BY_KIND.get((rt.group, rt.kind), ()), *rt.selectable)


def field_map(rt: ResourceType) -> Callable[[Obj], dict[str, str]]:
    """A function giving every supported field of an object of ``rt`` as text."""
    names = supported(rt)

    def compute(obj: Obj) -> dict[str, str]:
        out = {}
        for name in names:
            value = _lookup(obj, _ALIASES.get((rt.group, rt.kind, name), name))
            if value is None and name in _BOOL_FIELDS:
                value = False
            out[name] = _text(value)
        return out

    return compute
