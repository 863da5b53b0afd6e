"""Small readers over Pod and Node dicts shared by the scheduler and the kubelet."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kq.api.selectors import Taint, parse_taints
from kq.sandbox.cluster.actions import meta

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def node_name_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return meta(obj).get("annotations") or {}


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_:
            return cond  # type: ignore[no-any-return]
    return None


def ready_status(node: Mapping[str, Any]) -> str:
    """``True``, ``False`` or ``Unknown``; a node that never reported counts as Unknown."""
    cond = condition(node, "Ready")
    return str(cond.get("status")) if cond else "Unknown"


def effective_taints(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    """The node's taints plus those the node lifecycle controller is about to add.

    Why: between a Ready flip and the lifecycle pass that taints the node, the scheduler must
    already treat the node as unusable, as kube-scheduler does through its NodeReady checks.
    """
    taints = list(parse_taints((node.get("spec") or {}).get("taints")))
    keys = {t.key for t in taints}
    status = ready_status(node)
    implied = NOT_READY_TAINT if status == "False" else UNREACHABLE_TAINT
    if status != "True" and implied not in keys:
        taints.append(Taint(implied, "", "NoSchedule"))
    return tuple(taints)
