"""A Workload's requests as Kueue counts them in its namespace, and why it may not be admitted.

Kueue adjusts a pending Workload's pod sets before queueing it: LimitRange defaults fill the
containers' missing limits and requests, then limits stand in for requests still missing. It
then refuses to reserve quota for a Workload whose requests exceed its limits or fall outside
the namespace's LimitRange bounds (``QuotaReserved=False``, reason ``Misconfigured``).
"""

from __future__ import annotations

import dataclasses

from kq.api.limitrange import LimitRangeSummary, violations, with_container_defaults
from kq.api.podrequests import aggregate, requests_above_limits, requests_of
from kq.api.workload import PodSet, Workload, pod_spec_path

INVALID_RESOURCES = "resources validation failed"
OUTSIDE_LIMIT_RANGE = "resources didn't satisfy LimitRange constraints"


def _adjusted(pod_set: PodSet, index: int, summary: LimitRangeSummary) -> PodSet:
    path = pod_spec_path(index)
    pod = with_container_defaults(pod_set.resources, summary.container)
    return dataclasses.replace(
        pod_set,
        requests=requests_of(pod),
        invalid_resources=requests_above_limits(pod, path),
        outside_limit_range=violations(pod, summary, path),
    )


def adjusted(workload: Workload, summary: LimitRangeSummary | None) -> Workload:
    """The Workload with its namespace's LimitRange applied; itself when there is none."""
    if summary is None:
        return workload
    pod_sets = tuple(_adjusted(ps, i, summary) for i, ps in enumerate(workload.pod_sets))
    return dataclasses.replace(workload, pod_sets=pod_sets)


def resources_error(workload: Workload) -> str | None:
    """Kueue's message for invalid requests, checked before the LimitRange bounds."""
    if not any(ps.invalid_resources or ps.outside_limit_range for ps in workload.pod_sets):
        return None  # asked of every head: the usual answer without building two lists
    invalid = [e for ps in workload.pod_sets for e in ps.invalid_resources]
    if invalid:
        return f"{INVALID_RESOURCES}: {aggregate(invalid)}"
    outside = [e for ps in workload.pod_sets for e in ps.outside_limit_range]
    if outside:
        return f"{OUTSIDE_LIMIT_RANGE}: {aggregate(outside)}"
    return None
