"""kq.dev Budget: the resource-time a ClusterQueue, Cohort or LocalQueue may consume per window.

Cluster-scoped, like ClusterQueue and Cohort: a budget is an administrator's limit on shared
capacity, and a team with rights in its own namespace must not be able to lift it. Fields the
schema cannot check well (a zero window, an unknown resource name) are refused by kq's
``/validate/budgets`` webhook with a message naming the field (see ``kq.budgets``).
"""

from __future__ import annotations

from typing import Any

from kq import budgets as api
from kq.crds.core import conditions
from kq.crds.schema import (
    AGE_COLUMN,
    PrinterColumn,
    Version,
    array,
    crd,
    date_time,
    dns_subdomain,
    integer,
    map_of,
    obj,
    quantity,
    string,
)

GROUP = api.GROUP
_DURATION = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"


def _spec() -> dict[str, Any]:
    target = obj(
        {
            "kind": string(enum=api.TARGET_KINDS, description="What the budget bounds."),
            "name": dns_subdomain(description="The ClusterQueue, Cohort or LocalQueue."),
            "namespace": string(max_length=63, description="The LocalQueue's namespace."),
        },
        required=("kind", "name"),
    )
    window = obj(
        {
            "duration": string(
                pattern=_DURATION, description="Window length, a positive Go duration (720h)."
            ),
            "alignment": string(
                enum=(api.ROLLING, api.CALENDAR),
                default=api.ROLLING,
                description="Rolling: the last `duration`. Calendar: consecutive windows of "
                "`duration` from `start`, each starting from zero.",
            ),
            "start": date_time(description="Calendar only: when the first window starts."),
        },
        required=("duration",),
    )
    return obj(
        {
            "target": target,
            "window": window,
            "resourceHours": map_of(
                quantity(),
                max_properties=16,
                description="Per resource, the resource-hours allowed per window "
                "(google.com/tpu: 10000 is 10,000 chip-hours).",
            ),
            "whenExhausted": string(
                enum=api.POLICIES,
                default=api.WAIT,
                description="What a workload that would exceed the budget does. Wait: it stays "
                "pending. LowerPriority: it is admitted at its priority plus priorityBoost. "
                "Borrow: it is admitted only on capacity its ClusterQueue borrows from its "
                "cohort, never by preemption.",
            ),
            "priorityBoost": {
                **integer(
                    minimum=api.MIN_INT32,
                    description="LowerPriority only (and required there): added to an "
                    "over-budget workload's priority, as Kueue's kueue.x-k8s.io/priority-boost.",
                ),
                "maximum": -1,
            },
        },
        required=("target", "window", "resourceHours"),
    )


def _status() -> dict[str, Any]:
    hours = map_of(string(), description="Per resource, resource-hours.")
    admission = obj(
        {
            "workload": string(description="namespace/name."),
            "uid": string(),
            "start": date_time(),
            "end": date_time(description="Unset while the workload holds quota."),
            "boundEnd": date_time(description="When maximumExecutionTimeSeconds ends it."),
            "usage": map_of(quantity(), description="Per resource, what it holds."),
            "total": map_of(
                integer(fmt="int64", minimum=0),
                description="A compacted entry: resource-seconds (Kueue units) that count in "
                "full until its end leaves the window.",
            ),
        },
        required=("workload", "uid", "start", "usage"),
    )
    return obj(
        {
            "observedGeneration": integer(fmt="int64", minimum=0),
            "windowStart": date_time(),
            "windowEnd": date_time(description="Calendar windows only."),
            "consumed": hours,
            "reserved": hours,
            "remaining": hours,
            "admissions": array(
                admission,
                description="The ledger: each admission counted in the window, so the "
                "accounting survives a restart of kq.",
            ),
            "conditions": conditions(description="Active, Exhausted."),
        }
    )


def budget() -> dict[str, Any]:
    """Budget, served as v1alpha1."""
    columns = (
        PrinterColumn("Target", "string", ".spec.target.name"),
        PrinterColumn("Window", "string", ".spec.window.duration"),
        PrinterColumn("Exhausted", "string", '.status.conditions[?(@.type=="Exhausted")].status'),
        AGE_COLUMN,
    )
    version = Version(api.VERSION, _spec(), _status(), printer_columns=columns, required=("spec",))
    return crd(
        group=GROUP,
        kind="Budget",
        plural="budgets",
        namespaced=False,
        versions=[version],
    )


def crds() -> list[dict[str, Any]]:
    """Every kq.dev CRD."""
    return [budget()]
