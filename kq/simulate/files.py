"""The figures as plain data, and as the JSON and CSV files a run writes.

Amounts are in display units: cpu in cores, memory and storage in GiB, anything else as
counted (a GPU is 1). Times are virtual seconds from the trace's origin.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kq.api.quantity import is_milli
from kq.api.quotas import FlavorResource
from kq.simulate.figures import NodeFigures, time_mean, wait_summary
from kq.simulate.run import Run

BYTE_RESOURCES = ("memory", "ephemeral-storage", "storage")


def unit(resource: str) -> str:
    if is_milli(resource):
        return "cores"
    return "GiB" if resource.endswith(BYTE_RESOURCES) else "units"


def display(resource: str, amount: float) -> float:
    if is_milli(resource):
        return round(amount / 1000, 3)
    if resource.endswith(BYTE_RESOURCES):
        return round(amount / 2**30, 3)
    return round(amount, 3)


def fr_name(fr: FlavorResource) -> str:
    return f"{fr[0]}/{fr[1]}"


def resource_figures(node: NodeFigures, end: float) -> dict[str, dict[str, Any]]:
    series, out = node.series, {}
    for fr, nominal in node.nominal.items():
        resource = fr[1]
        used, borrowed = series.used.get(fr, []), series.borrowed.get(fr, [])
        mean_used = time_mean(series.times, used, end)
        out[fr_name(fr)] = {
            "unit": unit(resource),
            "nominal": display(resource, nominal),
            "meanUsed": display(resource, mean_used),
            "peakUsed": display(resource, max(used, default=0)),
            "utilisation": round(mean_used / nominal, 4) if nominal else None,
            "meanBorrowed": display(resource, time_mean(series.times, borrowed, end)),
            "peakBorrowed": display(resource, max(borrowed, default=0)),
            "meanLent": display(resource, time_mean(series.times, series.lent.get(fr, []), end)),
        }
    return out


def node_data(node: NodeFigures, end: float) -> dict[str, Any]:
    series = node.series
    return {
        "kind": node.kind,
        "parent": node.parent,
        "workloads": node.workloads,
        "admitted": node.admitted,
        "pendingAtEnd": node.pending_at_end,
        "preemptions": node.preemptions,
        "waitSeconds": wait_summary(node.waits),
        "meanPending": round(time_mean(series.times, series.pending, end), 3),
        "peakPending": max(series.pending, default=0),
        "resources": resource_figures(node, end),
    }


def series_data(node: NodeFigures) -> dict[str, Any]:
    series = node.series

    def shown(values: dict[FlavorResource, Any]) -> dict[str, list[float]]:
        return {fr_name(fr): [display(fr[1], v) for v in vs] for fr, vs in values.items()}

    return {
        "times": series.times,
        "pending": series.pending,
        "running": series.running,
        "used": shown(series.used),
        "borrowed": shown(series.borrowed),
        "lent": shown(series.lent),
    }


def workload_rows(run: Run) -> list[dict[str, Any]]:
    pending = set(run.pending)
    rows = []
    for record in run.recorder.workloads.values():
        last = record.stints[-1] if record.stints else None
        rows.append(
            {
                "workload": record.key,
                "clusterQueue": record.cluster_queue,
                "priority": record.priority,
                "effectivePriority": record.effective_priority,
                "arrival": record.arrival,
                "runtime": record.runtime,
                "firstAdmission": record.first_admission,
                "waitSeconds": record.wait,
                "admissions": len(record.stints),
                "preemptions": record.preemptions,
                "flavors": ",".join(f"{r}={f}" for r, f in sorted((last or _NONE).flavors.items())),
                "borrowing": bool(last and last.borrowing),
                "finished": record.finished,
                "pendingAtEnd": record.key in pending,
            }
        )
    return rows


class _None:
    flavors: dict[str, str] = {}


_NONE = _None()


def run_data(run: Run, figures: dict[str, NodeFigures]) -> dict[str, Any]:
    """Everything a run measured, as JSON-ready data."""
    end = run.end
    queues = {n.name: node_data(n, end) for n in figures.values() if n.kind == "ClusterQueue"}
    cohorts = {n.name: node_data(n, end) for n in figures.values() if n.kind == "Cohort"}
    return {
        "label": run.label,
        "virtualEndSeconds": end,
        "wallSeconds": round(run.wall, 4),
        "cycles": run.recorder.cycles,
        "workloads": workload_rows(run),
        "clusterQueues": queues,
        "cohorts": cohorts,
        "series": {key: series_data(n) for key, n in figures.items()},
    }


def _write_csv(path: Path, header: list[str], rows: Iterable[Iterable[Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)


def write_files(out: Path, data: dict[str, Any], prefix: str = "") -> list[Path]:
    """``figures.json``, ``workloads.csv``, ``queues.csv`` and ``series.csv`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{prefix}{n}" for n in ("figures.json", "workloads", "queues", "series")]
    paths[1:] = [p.with_suffix(".csv") for p in paths[1:]]
    paths[0].write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    rows = data["workloads"]
    _write_csv(paths[1], list(rows[0]) if rows else [], ([*r.values()] for r in rows))
    _write_csv(paths[2], _QUEUE_HEADER, _queue_rows(data))
    _write_csv(paths[3], _SERIES_HEADER, _series_rows(data))
    return paths


_QUEUE_HEADER = [
    "kind", "name", "parent", "workloads", "admitted", "pendingAtEnd", "preemptions",
    "waitMean", "waitP50", "waitP90", "waitMax", "meanPending", "peakPending", "flavor",
    "resource", "unit", "nominal", "meanUsed", "peakUsed", "utilisation", "meanBorrowed",
    "peakBorrowed", "meanLent",
]  # fmt: skip

_SERIES_HEADER = [
    "time", "kind", "name", "flavor", "resource", "used", "borrowed", "lent", "pending",
    "running",
]  # fmt: skip


def _queue_rows(data: dict[str, Any]) -> Iterable[list[Any]]:
    for group in ("clusterQueues", "cohorts"):
        for name, node in data[group].items():
            wait = node["waitSeconds"]
            common = [
                node["kind"], name, node["parent"], node["workloads"], node["admitted"],
                node["pendingAtEnd"], node["preemptions"], wait["mean"], wait["p50"],
                wait["p90"], wait["max"], node["meanPending"], node["peakPending"],
            ]  # fmt: skip
            for fr, figures in node["resources"].items():
                flavor, resource = fr.split("/", 1)
                yield [*common, flavor, resource, *figures.values()]


def _series_rows(data: dict[str, Any]) -> Iterable[list[Any]]:
    for key, series in data["series"].items():
        kind, name = key.split("/", 1)
        for i, at in enumerate(series["times"]):
            pending, running = series["pending"][i], series["running"][i]
            for fr, used in series["used"].items():
                flavor, resource = fr.split("/", 1)
                yield [
                    at, kind, name, flavor, resource, used[i], series["borrowed"][fr][i],
                    series["lent"][fr][i], pending, running,
                ]  # fmt: skip
