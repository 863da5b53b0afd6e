"""A Job's ``podFailurePolicy``: what a failed pod means (FailJob, Ignore, Count, FailIndex)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _exit_codes(pod: Mapping[str, Any], container: str | None) -> list[tuple[str, int]]:
    out = []
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        terminated = (status.get("state") or {}).get("terminated")
        if terminated and (container is None or status.get("name") == container):
            out.append((str(status.get("name")), int(terminated.get("exitCode") or 0)))
    return out


def _matches_exit_codes(rule: Mapping[str, Any], pod: Mapping[str, Any]) -> str | None:
    """A description of the matching exit code, or ``None``; exit code 0 never matches."""
    req = rule.get("onExitCodes")
    if not req:
        return None
    values = {int(v) for v in req.get("values") or ()}
    for name, code in _exit_codes(pod, req.get("containerName")):
        if code == 0:
            continue
        if (code in values) == (req.get("operator") == "In"):
            return f"Container {name} for pod {_name(pod)} failed with exit code {code}"
    return None


def _matches_conditions(rule: Mapping[str, Any], pod: Mapping[str, Any]) -> str | None:
    patterns = rule.get("onPodConditions") or ()
    for cond in (pod.get("status") or {}).get("conditions") or ():
        for pattern in patterns:
            if cond.get("type") == pattern.get("type") and cond.get("status") == pattern.get(
                "status", "True"
            ):
                return f"Pod {_name(pod)} has condition {cond['type']}"
    return None


def _name(pod: Mapping[str, Any]) -> str:
    m = pod.get("metadata") or {}
    return f"{m.get('namespace', '')}/{m.get('name', '')}"


def evaluate(job: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[str, str]:
    """(action, message) for a failed pod; ``("Count", "")`` when no rule matches."""
    rules = ((job.get("spec") or {}).get("podFailurePolicy") or {}).get("rules") or ()
    for index, rule in enumerate(rules):
        found = _matches_exit_codes(rule, pod) or _matches_conditions(rule, pod)
        if found:
            action = str(rule.get("action"))
            return action, f"{found} matching {action} rule at index {index}"
    return "Count", ""
