"""Kueue's job framework series: how long a job waited for its Workload."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kq.api.timestamps import parse_time
from kq.observability.metric_options import role
from kq.observability.metrics import workload_creation_latency_seconds


def workload_created(kind: str, job: Mapping[str, Any], workload: Mapping[str, Any]) -> None:
    """Observe the job-to-Workload latency, from the two objects' creation timestamps, for a
    job never changed since its creation (generation 1), as Kueue does."""
    meta = job.get("metadata") or {}
    if int(meta.get("generation") or 1) > 1:
        return
    job_created = parse_time(meta.get("creationTimestamp"))
    created = parse_time((workload.get("metadata") or {}).get("creationTimestamp"))
    if job_created is None or created is None:
        return
    workload_creation_latency_seconds.labels(kind, role()).observe(max(0.0, created - job_created))
