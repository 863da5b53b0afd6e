"""``--trace-from-cluster``: a trace from the Workloads a live cluster ran over a window.

A Workload created within the window becomes one trace entry: it arrives at its
``creationTimestamp``, runs from its last ``Admitted`` transition to its ``Finished`` one (a
preempted workload's last run; still running: the time so far, a lower bound), with its pod
sets' counts and per-pod requests, tolerations, node selector and topology request, its
priority, its priority boost annotation (with a budget's mark, if any) and its
``maximumExecutionTimeSeconds`` (what a Budget counts on). Workloads that
never ran (pending, or finished before admission) are skipped and counted: nothing says how
long they would run. Arrivals are seconds from the first one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kq.api.conditions import find, parse_conditions
from kq.api.podrequests import parse_pod_resources, requests_of
from kq.api.priority import LOWERED_BY_BUDGET_ANNOTATION, PRIORITY_BOOST_ANNOTATION
from kq.api.quantity import format_amount
from kq.api.timestamps import parse_time
from kq.api.topology import EXCLUSIVE_TOPOLOGY
from kq.api.workload import ADMITTED, FINISHED
from kq.runtime.client import KubeClient
from kq.runtime.resources import WORKLOADS
from kq.simulate.capture import list_all

Obj = dict[str, Any]
PRIORITY_ANNOTATIONS = (PRIORITY_BOOST_ANNOTATION, LOWERED_BY_BUDGET_ANNOTATION)


@dataclass
class History:
    """The trace entries, and why the other Workloads of the window were left out."""

    entries: list[Obj] = field(default_factory=list)
    running: int = 0
    """Entries still running at capture: their run time is a lower bound."""
    origin: float = 0.0
    """The first arrival, as Unix time: trace time 0."""
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _pod_set(raw: Mapping[str, Any]) -> Obj:
    spec = (raw.get("template") or {}).get("spec") or {}
    requests = requests_of(parse_pod_resources(spec))
    out: Obj = {
        "name": str(raw.get("name") or "main"),
        "count": int(raw.get("count", 1)),
        "requests": {r: format_amount(r, a) for r, a in requests.items()},
    }
    for key, value in (("tolerations", spec.get("tolerations")),
                       ("nodeSelector", spec.get("nodeSelector")),
                       ("minCount", raw.get("minCount")),
                       ("topologyRequest", raw.get("topologyRequest"))):  # fmt: skip
        if value:
            out[key] = value
    return out


def _run(obj: Mapping[str, Any], now: float) -> tuple[float, bool] | str:
    """(run seconds, still running), or why the workload is left out."""
    conditions = parse_conditions((obj.get("status") or {}).get("conditions"))
    admitted, finished = find(conditions, ADMITTED), find(conditions, FINISHED)
    started = admitted.last_transition_time if admitted and admitted.is_true else None
    if finished is not None and finished.is_true:
        if started is None or finished.last_transition_time is None:
            return "finished without running"
        return max(finished.last_transition_time - started, 0.0), False
    if started is None:
        return "not admitted: run time unknown"
    return max(now - started, 0.0), True


def entry(obj: Mapping[str, Any], created: float, runtime: float, classes: set[str]) -> Obj:
    """The trace entry of a Workload (``arrival`` still absolute: Unix seconds)."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    out: Obj = {
        "name": str(meta.get("name")),
        "namespace": str(meta.get("namespace") or "default"),
        "queue": str(spec.get("queueName") or ""),
        "arrival": created,
        "runtime": runtime,
    }
    class_name = spec.get("priorityClassName")
    if class_name and class_name in classes:
        out["priorityClass"] = str(class_name)
    else:
        out["priority"] = int(spec.get("priority") or 0)
    if spec.get("maximumExecutionTimeSeconds"):
        out["maxExecutionSeconds"] = int(spec["maximumExecutionTimeSeconds"])
    annotations = meta.get("annotations") or {}
    exclusive = annotations.get(EXCLUSIVE_TOPOLOGY)
    if exclusive:
        out["exclusiveTopology"] = exclusive
    # Its priority boost (and a budget's mark on it), which the simulation weighs as kq does.
    kept = {k: str(annotations[k]) for k in PRIORITY_ANNOTATIONS if k in annotations}
    if kept:
        out["annotations"] = kept
    out["podSets"] = [_pod_set(ps) for ps in spec.get("podSets") or ()]
    return out


async def history(
    client: KubeClient, since: float, classes: set[str], now: float | None = None
) -> History:
    """The window's Workloads as a trace; ``classes``: the priority class names the setup has
    (a Workload naming another keeps its number only)."""
    now = time.time() if now is None else now
    found = History()
    async for obj in list_all(client, WORKLOADS):
        created = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
        if created is None or created < now - since:
            continue  # outside the window
        if not (obj.get("spec") or {}).get("queueName"):
            found.skip("no queue name")
            continue
        run = _run(obj, now)
        if isinstance(run, str):
            found.skip(run)
            continue
        runtime, running = run
        found.entries.append(entry(obj, created, runtime, classes))
        found.running += running
    found.entries.sort(key=lambda e: (e["arrival"], e["namespace"], e["name"]))
    if found.entries:
        found.origin = found.entries[0]["arrival"]
        for e in found.entries:
            e["arrival"] = round(e["arrival"] - found.origin, 3)
    return found
