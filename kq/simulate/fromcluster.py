"""Reading a live cluster for ``kq simulate``: its queueing objects, its Workloads' history.

Only GET requests are sent. What was read is also written to the output directory
(``cluster-setup.yaml``, ``cluster-trace.yaml``) so the same run can be repeated, or edited,
from files.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio.config.config_exception import ConfigException

from kq.runtime.client import ClientSettings, KubeClient
from kq.runtime.errors import ApiError
from kq.simulate.capture import Captured, capture
from kq.simulate.history import History, history
from kq.simulate.source import InputError

SETUP_FILE, TRACE_FILE = "cluster-setup.yaml", "cluster-trace.yaml"
CLASS_KINDS = ("WorkloadPriorityClass", "PriorityClass")


@dataclass
class FromCluster:
    captured: Captured | None = None
    history: History | None = None
    notes: list[str] = field(default_factory=list)


async def _read(
    kubeconfig: Path | None, objects: bool, since: float | None, classes: set[str]
) -> FromCluster:
    out = FromCluster()
    settings = ClientSettings(user_agent="kq-simulate", max_attempts=3)
    async with await KubeClient.connect(kubeconfig, settings) as client:
        if objects:
            out.captured = await capture(client)
            classes = classes | {
                str(o["metadata"]["name"]) for o in out.captured.objects if o["kind"] in CLASS_KINDS
            }
        if since is not None:
            out.history = await history(client, since, classes)
    if out.captured is not None and out.history is not None:
        _keep_captured_queues(out.history, out.captured)
    return out


def _keep_captured_queues(found: History, captured: Captured) -> None:
    """Workloads whose LocalQueue was not captured (gone, or left out as dangling) could
    not be placed in the simulation: they are counted as skipped, not an error."""
    queues = {
        f"{o['metadata'].get('namespace')}/{o['metadata']['name']}"
        for o in captured.objects
        if o["kind"] == "LocalQueue"
    }
    kept = []
    for entry in found.entries:
        if f"{entry['namespace']}/{entry['queue']}" in queues:
            kept.append(entry)
        else:
            found.skip("its LocalQueue is not in the cluster's setup")
    found.entries = kept


def kubeconfig_path(given: Path | None) -> Path | None:
    """``given``, else ``$KUBECONFIG`` (its first file), else ``~/.kube/config``; ``None``
    (the pod's service account) only inside a cluster."""
    if given is not None:
        return given
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return Path(listed[0])
    default = Path.home() / ".kube" / "config"
    if default.exists() or not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return default
    return None


def read_cluster(
    kubeconfig: Path | None, objects: bool, since: float | None, classes: set[str]
) -> FromCluster:
    """The cluster's objects (when ``objects``) and the Workloads of the last ``since``
    seconds (when given); ``classes``: priority class names the setup files already have."""
    path = kubeconfig_path(kubeconfig)
    if path is not None and not path.is_file():
        raise InputError(f"reading the cluster: kubeconfig {path}: no such file")
    try:
        found = asyncio.run(_read(path, objects, since, classes))
    except ConfigException as exc:
        raise InputError(f"reading the cluster: kubeconfig {path}: {exc}") from exc
    except ApiError as exc:
        raise InputError(f"reading the cluster: {exc}") from exc
    except (OSError, ValueError, TypeError) as exc:
        # kubernetes_asyncio raises these for a missing or malformed kubeconfig.
        raise InputError(f"reading the cluster: {type(exc).__name__}: {exc}") from exc
    found.notes = _notes(found)
    return found


def _notes(found: FromCluster) -> list[str]:
    notes = []
    if found.captured is not None:
        notes.append(f"from the cluster: {len(found.captured.objects)} objects")
        if found.captured.unserved:
            notes.append(f"  not served there: {', '.join(found.captured.unserved)}")
        if found.captured.dangling:
            notes.append(
                "  LocalQueues left out, their ClusterQueue does not exist: "
                + ", ".join(found.captured.dangling)
            )
    h = found.history
    if h is not None and not h.entries:
        notes.append("from the cluster: no workload that ran in the window")
    elif h is not None:
        origin = datetime.fromtimestamp(h.origin, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        notes.append(
            f"from the cluster: {len(h.entries)} workloads, the first at {origin} "
            f"({h.running} still running: their run time so far)"
        )
    for why, count in sorted(h.skipped.items() if h is not None else ()):
        notes.append(f"  left out: {count} ({why})")
    return notes


def write_captured(out: Path, found: FromCluster) -> list[Path]:
    """What was read, as files ``kq simulate`` takes back."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if found.captured is not None:
        written.append(_dump(out / SETUP_FILE, found.captured.objects, all_documents=True))
    if found.history is not None:
        written.append(_dump(out / TRACE_FILE, {"workloads": found.history.entries}))
    return written


def _dump(path: Path, data: Any, all_documents: bool = False) -> Path:
    with path.open("w", encoding="utf-8") as stream:
        if all_documents:
            yaml.safe_dump_all(data, stream, sort_keys=False)
        else:
            yaml.safe_dump(data, stream, sort_keys=False)
    return path
