"""Small setups and traces for the simulator's tests, written as the user would write them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kq.simulate.run import Run, prepare, simulate
from kq.simulate.setup import load_setup

FLAVOR = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
          "metadata": {"name": "default"}}  # fmt: skip


def cluster_queue(name: str, cpu: int, cohort: str | None = None, **spec: Any) -> dict[str, Any]:
    """A ClusterQueue with ``cpu`` nominal on the ``default`` flavor; ``borrowingLimit`` and
    ``lendingLimit`` keys in ``spec`` go onto that quota, the rest into the spec."""
    quota: dict[str, Any] = {"name": "cpu", "nominalQuota": cpu}
    for limit in ("borrowingLimit", "lendingLimit"):
        if spec.get(limit) is not None:
            quota[limit] = spec[limit]
        spec.pop(limit, None)
    body: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [quota]}]}
        ],
        **spec,
    }
    if cohort is not None:
        body["cohort"] = cohort
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": body}  # fmt: skip


def local_queue(cq: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"namespace": namespace, "name": cq},
        "spec": {"clusterQueue": cq},
    }


def write_setup(path: Path, *objects: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return path


def write_trace(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"workloads": entries}, sort_keys=False))
    return path


def run_files(setup: Path, trace: Path, config: Path | None = None) -> Run:
    return simulate(prepare("test", load_setup([setup], config), trace))


def job(name: str, at: float, cq: str, cpu: int, runtime: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "arrival": at, "queue": f"default/{cq}", "runtime": runtime,
            "requests": {"cpu": cpu}, **extra}  # fmt: skip
