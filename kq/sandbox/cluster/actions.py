"""The values controllers return: creates, merge patches, deletes and Events, applied in order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Obj = dict[str, Any]
"""An API object exactly as the Kubernetes API returns it."""


@dataclass(frozen=True, slots=True)
class Ref:
    """Which object an action targets."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    @staticmethod
    def of(obj: Mapping[str, Any]) -> Ref:
        meta = obj.get("metadata") or {}
        return Ref(
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            str(meta.get("namespace", "")),
            str(meta.get("name", "")),
            str(meta.get("uid", "")),
        )


@dataclass(frozen=True, slots=True)
class Create:
    obj: Obj


@dataclass(frozen=True, slots=True)
class Patch:
    """A JSON merge patch (RFC 7386): lists are replaced whole, ``None`` removes a key."""

    ref: Ref
    patch: Obj
    subresource: Literal["", "status"] = ""


@dataclass(frozen=True, slots=True)
class Delete:
    ref: Ref
    propagation: Literal["Background", "Foreground", "Orphan"] = "Background"
    grace_period_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class Event:
    """A core/v1 Event about ``regarding``, as a controller's event recorder would emit it."""

    regarding: Ref
    reason: str
    message: str
    type: Literal["Normal", "Warning"] = "Normal"
    source: str = field(default="", compare=False)


Action = Create | Patch | Delete | Event


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata`` or an empty mapping."""
    return obj.get("metadata") or {}


def owned_by(obj: Mapping[str, Any], owner_uid: str) -> bool:
    """True when ``obj`` has a controller ownerReference to ``owner_uid``."""
    return any(
        ref.get("uid") == owner_uid and ref.get("controller")
        for ref in meta(obj).get("ownerReferences") or ()
    )


def controller_ref(owner: Mapping[str, Any]) -> Obj:
    """The ownerReference a controller sets on what it creates."""
    m = meta(owner)
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": m["name"],
        "uid": m["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def by_object(actions: Iterable[Action]) -> list[list[Action]]:
    """Split into runs of consecutive actions about one object (a pod, a node)."""
    groups: list[list[Action]] = []
    last: tuple[str, str, str] | None = None
    for action in actions:
        target = _target(action)
        if not groups or target != last:
            groups.append([])
        groups[-1].append(action)
        last = target
    return groups


def _target(action: Action) -> tuple[str, str, str]:
    """(kind, namespace, name) of the object ``action`` is about; a Binding is about its pod."""
    if isinstance(action, Create):
        m = meta(action.obj)
        kind = "Pod" if action.obj["kind"] == "Binding" else str(action.obj["kind"])
        return kind, str(m.get("namespace", "")), str(m.get("name", ""))
    ref = action.regarding if isinstance(action, Event) else action.ref
    return ref.kind, ref.namespace, ref.name


def describe(action: Action) -> str:
    """``action`` in a log line: its type and the object it is about."""
    kind, ns, name = _target(action)
    return f"{type(action).__name__} {kind} {ns + '/' if ns else ''}{name}"
