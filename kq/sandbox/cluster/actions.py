"""The values controllers return: creates, merge patches, deletes and Events, applied in order."""

from __future__ import annotations

from collections.abc import Mapping
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
