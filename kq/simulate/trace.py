"""The workload trace: arrivals with their queue, pod sets, priority and run time.

YAML: a list (or ``workloads:``) of entries. CSV: one pod set per row, columns ``name``,
``arrival``, ``queue``, ``runtime``, ``priority`` or ``priorityClass``, ``count``,
``requests`` (``cpu=2;memory=4Gi``) and optionally ``namespace``, ``podSet`` and
``maxExecutionSeconds``; rows
sharing a name add pod sets to one workload. A YAML entry's ``annotations`` may carry Kueue's
``kueue.x-k8s.io/priority-boost`` (and kq's ``kq.dev/lowered-by-budget``): the workload is
then ordered and preempted at its effective priority, by the core's own rule. Times are
seconds or Go durations (``1m30s``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kq.api.invalid import Invalid
from kq.api.priority import (
    POD_PRIORITY_CLASS_SOURCE,
    PRIORITY_BOOST_ANNOTATION,
    WORKLOAD_PRIORITY_CLASS_SOURCE,
    boost_error,
    priority_boost,
)
from kq.api.topology import EXCLUSIVE_TOPOLOGY
from kq.api.workload import Workload, parse_workload
from kq.config import parse_duration
from kq.simulate.model import Model
from kq.simulate.source import InputError, Located, load_documents, read_text

ENTRY_KEYS = frozenset(
    {"name", "arrival", "namespace", "queue", "runtime", "priority", "priorityClass"}
    | {"podSets", "count", "requests", "tolerations", "nodeSelector", "minCount"}
    | {"topologyRequest", "exclusiveTopology", "maxExecutionSeconds", "annotations"}
)
POD_SET_KEYS = frozenset(
    {"name", "count", "requests", "tolerations", "nodeSelector", "minCount", "topologyRequest"}
)


@dataclass(frozen=True, slots=True)
class Arrival:
    """A workload entering its queue at ``at`` (virtual seconds); it runs ``runtime`` seconds
    once admitted (from the start again after a preemption, as a restarted job does)."""

    at: float
    workload: Workload
    runtime: float
    max_execution: int | None = None
    """``spec.maximumExecutionTimeSeconds``: kq stops it then, and budgets count on it."""
    annotations: Mapping[str, str] = field(default_factory=dict)
    """The Workload's annotations (what plugin controllers see, the priority boost among them)."""


class _Place:
    """Where an entry was written, to name it in errors."""

    def __init__(self, path: Path, line: int, lines: Mapping[str, int] | None = None) -> None:
        self.path, self.line, self.lines = path, line, lines or {}

    def error(self, field: str, message: str) -> InputError:
        line = self.lines.get(field.split(".")[0].split("[")[0], self.line)
        return InputError(f"{self.path}:{line}: {field}: {message}")


class _Named(_Place):
    """An entry that was never written in a file: named by what it came from."""

    def __init__(self, label: str) -> None:
        super().__init__(Path(), 0)
        self.label = label

    def error(self, field: str, message: str) -> InputError:
        return InputError(f"{self.label}: {field}: {message}")


def load_trace(path: Path | Sequence[Mapping[str, Any]], model: Model) -> list[Arrival]:
    """Every arrival of the trace file (or of entries read from a cluster), in arrival order
    (trace order among equal times)."""
    if not isinstance(path, Path):
        named = [(_Named(f"Workload {e.get('namespace')}/{e.get('name')}"), e) for e in path]
        return _arrivals(named, model, "the cluster's Workloads")
    raw = list(_csv_entries(path) if path.suffix.lower() == ".csv" else _yaml_entries(path))
    return _arrivals(raw, model, str(path))


def _arrivals(
    raw: Sequence[tuple[_Place, Mapping[str, Any]]], model: Model, source: str
) -> list[Arrival]:
    if not raw:
        raise InputError(f"{source}: the trace has no workloads")
    arrivals, names = [], set()
    for index, (place, entry) in enumerate(raw):
        arrival = _arrival(place, entry, index, model)
        if arrival.workload.key in names:
            raise place.error("name", f"workload {arrival.workload.key} appears twice")
        names.add(arrival.workload.key)
        arrivals.append(arrival)
    return sorted(arrivals, key=lambda a: a.at)


def _yaml_entries(path: Path) -> Iterator[tuple[_Place, Mapping[str, Any]]]:
    documents = list(load_documents(path))
    items: list[Any] = []
    for document in documents:
        if isinstance(document, dict) and "workloads" in document:
            items.extend(document["workloads"] or ())
        elif isinstance(document, list):
            items.extend(document)
        else:
            line = document.line if isinstance(document, Located) else 1
            raise InputError(f"{path}:{line}: a trace is a list of workloads (or workloads:)")
    for item in items:
        if not isinstance(item, Located):
            raise InputError(f"{path}: every trace entry must be a mapping, not {item!r}")
        place = _Place(path, item.line, item.key_lines)
        unknown = sorted(set(item) - ENTRY_KEYS)
        if unknown:
            raise place.error(unknown[0], f"unknown field (known: {', '.join(sorted(ENTRY_KEYS))})")
        yield place, item


def _csv_entries(path: Path) -> Iterator[tuple[_Place, Mapping[str, Any]]]:
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
    header = [h.strip() for h in reader.fieldnames or ()]
    for required in ("arrival", "queue", "runtime", "requests"):
        if required not in header:
            raise InputError(f"{path}:1: {required}: missing column")
    merged: dict[str, tuple[_Place, dict[str, Any]]] = {}
    order: list[str] = []
    for row_number, row in enumerate(reader, start=1):
        place = _Place(path, reader.line_num)
        row = {(k or "").strip(): (v or "").strip() for k, v in row.items() if k}
        name = row.get("name") or f"row-{row_number}"
        # Rows are pod sets of one workload only within one namespace: names repeat across.
        key = f"{_csv_namespace(row)}/{name}"
        pod_set = {
            "name": row.get("podSet") or "main",
            "count": row.get("count") or "1",
            "requests": _csv_requests(place, row.get("requests", "")),
        }
        if key in merged:
            merged[key][1]["podSets"].append(pod_set)
            continue
        entry = {k: v for k, v in row.items() if v and k not in ("podSet", "count", "requests")}
        merged[key] = (place, {**entry, "name": name, "podSets": [pod_set]})
        order.append(key)
    for key in order:
        yield merged[key]


def _csv_namespace(row: Mapping[str, str]) -> str:
    """The namespace a row's workload lives in, as ``_queue`` reads it."""
    queue = row.get("queue", "")
    return queue.split("/", 1)[0] if "/" in queue else row.get("namespace") or "default"


def _csv_requests(place: _Place, text: str) -> dict[str, str]:
    out = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        resource, sep, amount = part.partition("=")
        if not sep or not resource.strip() or not amount.strip():
            raise place.error("requests", f"{part!r} is not resource=amount")
        out[resource.strip()] = amount.strip()
    return out


def _seconds(place: _Place, field: str, value: object) -> float:
    if isinstance(value, bool) or value is None:
        raise place.error(field, "Required: seconds or a duration such as 1m30s")
    try:
        seconds = float(value) if isinstance(value, int | float) else _text_seconds(str(value))
    except ValueError as exc:
        raise place.error(field, str(exc)) from None
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise place.error(field, f"must be a finite number of seconds >= 0, not {value!r}")
    return seconds


def _text_seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return parse_duration(text)


def _queue(place: _Place, entry: Mapping[str, Any], model: Model) -> tuple[str, str]:
    queue = str(entry.get("queue") or "")
    if not queue:
        raise place.error("queue", "Required: the LocalQueue, as name or namespace/name")
    namespace = str(entry.get("namespace") or "")
    if "/" in queue:
        namespace, queue = queue.split("/", 1)
    namespace = namespace or "default"
    if f"{namespace}/{queue}" not in model.local_queues:
        known = ", ".join(sorted(model.local_queues)) or "none"
        raise place.error("queue", f"LocalQueue {namespace}/{queue} is not in the setup ({known})")
    return namespace, queue


def _priority(place: _Place, entry: Mapping[str, Any], model: Model) -> dict[str, Any]:
    """``spec`` fields for the priority, as Kueue's webhook would have filled them."""
    value, name = entry.get("priority"), entry.get("priorityClass")
    if value is not None and name is not None:
        raise place.error("priorityClass", "give priority or priorityClass, not both")
    if name is not None:
        name = str(name)
        if name in model.workload_classes:
            source, number = WORKLOAD_PRIORITY_CLASS_SOURCE, model.workload_classes[name]
        elif name in model.pod_classes:
            source, number = POD_PRIORITY_CLASS_SOURCE, model.pod_classes[name]
        else:
            raise place.error("priorityClass", f"no WorkloadPriorityClass or PriorityClass {name}")
        return {"priority": number, "priorityClassName": name, "priorityClassSource": source}
    if value is None:
        return {"priority": model.default_pod_priority or 0}
    try:
        return {"priority": int(str(value))}
    except ValueError:
        raise place.error("priority", f"{value!r} is not an integer") from None


def _pod_sets(place: _Place, entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = entry.get("podSets")
    if raw is None:
        if "requests" not in entry:
            raise place.error("podSets", "Required: podSets, or count and requests")
        raw = [{k: entry[k] for k in POD_SET_KEYS - {"name"} if k in entry}]
    elif any(k in entry for k in POD_SET_KEYS - {"name"}):
        raise place.error("podSets", "give podSets, or count and requests, not both")
    if not isinstance(raw, list) or not raw:
        raise place.error("podSets", "must be a non-empty list")
    return [_pod_set(place, i, ps) for i, ps in enumerate(raw)]


def _pod_set(place: _Place, index: int, raw: object) -> dict[str, Any]:
    field = f"podSets[{index}]"
    if not isinstance(raw, dict):
        raise place.error(field, "must be a mapping")
    unknown = sorted(set(raw) - POD_SET_KEYS)
    if unknown:
        raise place.error(f"{field}.{unknown[0]}", "unknown field")
    if "requests" not in raw:
        raise place.error(f"{field}.requests", "Required: a mapping of resource to amount")
    # An empty mapping is a pod that requests nothing, which Kueue admits as using no quota.
    requests = raw["requests"] or {}
    if not isinstance(requests, dict):
        raise place.error(f"{field}.requests", "must be a mapping of resource to amount")
    try:
        count = int(str(raw.get("count", 1)))
    except ValueError:
        raise place.error(f"{field}.count", f"{raw.get('count')!r} is not an integer") from None
    if count < 1:
        raise place.error(f"{field}.count", "must be at least 1")
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"requests": _amounts(requests)}}],
        "tolerations": list(raw.get("tolerations") or ()),
    }
    if raw.get("nodeSelector"):
        spec["nodeSelector"] = dict(raw["nodeSelector"])
    out: dict[str, Any] = {"name": str(raw.get("name") or "main"), "count": count}
    if raw.get("minCount") is not None:
        out["minCount"] = raw["minCount"]
    if raw.get("topologyRequest") is not None:
        if not isinstance(raw["topologyRequest"], dict):
            raise place.error(f"{field}.topologyRequest", "must be a mapping (Kueue's fields)")
        out["topologyRequest"] = dict(raw["topologyRequest"])
    return {**out, "template": {"spec": spec}}


def _amounts(requests: Mapping[Any, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in requests.items()}


def _arrival(place: _Place, entry: Mapping[str, Any], index: int, model: Model) -> Arrival:
    at = _seconds(place, "arrival", entry.get("arrival"))
    runtime = _seconds(place, "runtime", entry.get("runtime"))
    namespace, queue = _queue(place, entry, model)
    name = str(entry.get("name") or f"wl-{index + 1}")
    metadata: dict[str, Any] = {"namespace": namespace, "name": name, "uid": f"sim-{index:07d}"}
    annotations = _annotations(place, entry, model)
    if entry.get("exclusiveTopology"):
        # JobSet's annotation: each replicated job's slice alone in its domain of this level.
        annotations[EXCLUSIVE_TOPOLOGY] = str(entry["exclusiveTopology"])
    if annotations:
        metadata["annotations"] = annotations
    obj = {
        "metadata": metadata,
        "spec": {"queueName": queue, "podSets": _pod_sets(place, entry)}
        | _priority(place, entry, model),
    }
    parsed = parse_workload(obj)
    if isinstance(parsed, Invalid):
        raise place.error("podSets", parsed.message)
    limit = _max_execution(place, entry)
    if limit is not None:
        runtime = min(runtime, limit)  # kq deactivates it at its maximum execution time
    # As the feed: the boost counts with the PriorityBoost gate on, or when a budget set it.
    boost = priority_boost(annotations, model.config.feature_gates.get("PriorityBoost", False))
    # The creation time is the arrival: the queues order FIFO by it.
    workload = dataclasses.replace(parsed, creation_time=at, priority_boost=boost)
    return Arrival(at, workload, runtime, limit, annotations)


def _annotations(place: _Place, entry: Mapping[str, Any], model: Model) -> dict[str, str]:
    raw = entry.get("annotations") or {}
    if not isinstance(raw, dict):
        raise place.error("annotations", "must be a mapping of name to string")
    out = {str(k): str(v) for k, v in raw.items()}
    boost = out.get(PRIORITY_BOOST_ANNOTATION)
    if boost is not None and model.config.feature_gates.get("PriorityBoost", False):
        error = boost_error(boost)
        if error is not None:  # kq's webhook refuses it while the gate is on
            raise place.error(f"annotations[{PRIORITY_BOOST_ANNOTATION}]", error)
    return out


def _max_execution(place: _Place, entry: Mapping[str, Any]) -> int | None:
    if entry.get("maxExecutionSeconds") is None:
        return None
    seconds = _seconds(place, "maxExecutionSeconds", entry["maxExecutionSeconds"])
    if seconds < 1 or seconds != int(seconds):
        raise place.error("maxExecutionSeconds", "must be a whole number of seconds >= 1")
    return int(seconds)
