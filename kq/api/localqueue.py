"""LocalQueue spec: the namespaced entry point that names a ClusterQueue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kq.api.invalid import Invalid


@dataclass(frozen=True, slots=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = "None"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_local_queue(obj: Mapping[str, Any]) -> LocalQueue | Invalid:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    spec = obj.get("spec") or {}
    cq = spec.get("clusterQueue")
    if not cq:
        return Invalid("LocalQueue", name, "InvalidSpec", "spec.clusterQueue: Required value")
    return LocalQueue(
        str(meta.get("namespace", "default")), name, str(cq), str(spec.get("stopPolicy") or "None")
    )
