"""Helpers the serving controllers share: template hashes, pod health, status diffs, scaling.

The serving controllers (``replicaset_controller``, ``deployment_controller``,
``statefulset_controller``, ``lws_controller``) create pods that run until deleted: a server
never exits by itself, so a template without a declared run time gets ``until_deleted``.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kq.sandbox.cluster.actions import Action, Obj, Patch, Ref, controller_ref, meta
from kq.sandbox.cluster.clock import parse_rfc3339, rfc3339
from kq.sandbox.cluster.kubelet import until_deleted
from kq.sandbox.cluster.names import safe_encode
from kq.sandbox.cluster.podinfo import condition, is_terminal, phase

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


class InvalidSpec(ValueError):
    """A spec the controller cannot act on; reported as a Warning event, never a crash."""


def template_hash(template: Mapping[str, Any], collision: int = 0) -> str:
    """A short hash of a pod template, spelled as ``pod-template-hash`` values are upstream.

    Upstream hashes the Go struct with FNV-32a and maps each decimal digit of the sum onto the
    ``rand`` alphabet; kq hashes the canonical JSON instead, so values differ from a real
    cluster's but are just as stable.
    """
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision:
        data += collision.to_bytes(4, "little")
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return safe_encode(str(value))


def active(pod: Mapping[str, Any]) -> bool:
    """Counted by its controller: neither finished nor being deleted."""
    return not is_terminal(pod) and not meta(pod).get("deletionTimestamp")


def running_ready(pod: Mapping[str, Any]) -> bool:
    return phase(pod) == "Running" and (condition(pod, "Ready") or {}).get("status") == "True"


def available(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """Ready for at least ``min_ready_seconds``."""
    if not running_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = (condition(pod, "Ready") or {}).get("lastTransitionTime")
    return bool(since) and parse_rfc3339(str(since)) + timedelta(seconds=min_ready_seconds) <= now


def available_at(pod: Mapping[str, Any], min_ready_seconds: int) -> datetime | None:
    """When a ready pod becomes available (a time-driven change the driver must wake for)."""
    since = (condition(pod, "Ready") or {}).get("lastTransitionTime")
    if min_ready_seconds <= 0 or not running_ready(pod) or not since:
        return None
    return parse_rfc3339(str(since)) + timedelta(seconds=min_ready_seconds)


def int_field(spec: Mapping[str, Any], key: str, default: int) -> int:
    """An integer spec field, defaulted as the API server would; a wrong type is refused."""
    value = spec.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSpec(f"spec.{key}: must be a non-negative integer, not {value!r}")
    return value


def scaled(value: int | str | None, total: int, *, round_up: bool, default: int | str) -> int:
    """An int-or-percent (``maxSurge``, ``maxUnavailable``) against ``total`` replicas."""
    raw = default if value is None else value
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    text = str(raw)
    if text.endswith("%") and text[:-1].isdigit():
        share = int(text[:-1]) * total / 100
        return math.ceil(share) if round_up else math.floor(share)
    if text.isdigit():
        return int(text)
    raise InvalidSpec(f"invalid value for IntOrString: {raw!r}")


def serving_pod(owner: Mapping[str, Any], template: Mapping[str, Any], name: str) -> Obj:
    """A pod of ``owner`` from ``template``, running until deleted unless it says otherwise."""
    body = until_deleted(copy.deepcopy(dict(template)))
    tmeta = body.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": meta(owner).get("namespace", "default"),
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": dict(tmeta.get("annotations") or {}),
            "ownerReferences": [controller_ref(owner)],
        },
        "spec": body.get("spec") or {},
    }


def status_patch(obj: Obj, status: Mapping[str, Any]) -> list[Action]:
    """A status patch of the fields that changed (none: no action). A zero or empty field the
    server omits counts as unchanged, else every pass would write it again."""
    old = obj.get("status") or {}
    patch = {
        k: v
        for k, v in status.items()
        if old.get(k) != v and not (v in (None, 0, "") and not old.get(k))
    }
    return [Patch(Ref.of(obj), {"status": patch}, "status")] if patch else []


def merge_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> Obj:
    """The JSON merge patch turning ``old`` into ``new`` (removed keys become ``None``)."""
    patch: Obj = {k: None for k in old if k not in new}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            inner = merge_diff(before, value)
            if inner:
                patch[key] = inner
        elif before != value:
            patch[key] = copy.deepcopy(value)
    return patch


def set_condition(
    conditions: Sequence[Obj],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
    *,
    touch: bool = False,
) -> list[Obj]:
    """Deployment-style conditions: ``lastUpdateTime`` moves on any change (or when ``touch``:
    progress with nothing new to say), the transition time only when the status flips."""
    stamp = rfc3339(now)
    old = next((c for c in conditions if c.get("type") == type_), None)
    if old is None:
        return [*conditions, _condition(type_, status, reason, message, stamp, stamp)]
    same = (old.get("status"), old.get("reason"), old.get("message")) == (status, reason, message)
    if same and not touch:
        return list(conditions)
    since = stamp if old.get("status") != status else str(old.get("lastTransitionTime") or stamp)
    new = _condition(type_, status, reason, message, stamp, since)
    return [new if c.get("type") == type_ else c for c in conditions]


def _condition(type_: str, status: str, reason: str, message: str, stamp: str, since: str) -> Obj:
    return {"type": type_, "status": status, "lastUpdateTime": stamp,
            "lastTransitionTime": since, "reason": reason, "message": message}  # fmt: skip
