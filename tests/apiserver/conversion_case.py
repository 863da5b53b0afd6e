"""One object of each converted kueue.x-k8s.io kind, written in v1beta1 and in v1beta2, using
the fields the two versions name or shape differently, with what the other version must read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kq.crds.conversion import V1BETA1, V1BETA2

WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
WPC_REF = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
USAGE = [{"name": "rf", "resources": [{"name": "cpu", "total": "3"}]}]
TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
POD_SETS = [{"name": "main", "count": 1, "template": TEMPLATE}]
AT = "2026-01-01T00:00:00Z"


@dataclass(frozen=True)
class Case:
    kind: str
    plural: str
    namespaced: bool
    version: str
    """The apiVersion the object is written in."""
    spec: dict[str, Any]
    status: dict[str, Any] | None
    """Merge-patched into the status subresource after the create, in the same version."""
    expected: dict[str, Any]
    """Part of what the other version reads."""
    absent: tuple[str, ...] = ()
    """Dotted paths the other version does not read."""


CASES = (
    Case(
        "ClusterQueue", "clusterqueues", False, V1BETA1,
        spec={"cohort": "team", "admissionChecks": ["prov"], "namespaceSelector": {},
              "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}},
        status=None,
        expected={"spec": {
            "cohortName": "team",
            "admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]},
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch",
                                  "whenCanPreempt": "MayStopSearch"}}},
        absent=("spec.cohort", "spec.admissionChecks"),
    ),
    Case(
        "ClusterQueue", "clusterqueues", False, V1BETA2,
        spec={"cohortName": "team", "namespaceSelector": {},
              "admissionChecksStrategy": {"admissionChecks": [{"name": "prov",
                                                               "onFlavors": ["rf"]}]},
              "concurrentAdmissionPolicy": {"migration": {
                  "mode": "TryPreferredFlavors",
                  "constraints": {"lastAcceptableFlavorName": "rf"}}}},
        status=None,
        expected={"spec": {"cohort": "team", "admissionChecksStrategy": {
            "admissionChecks": [{"name": "prov", "onFlavors": ["rf"]}]}}},
        absent=("spec.cohortName", "spec.concurrentAdmissionPolicy"),
    ),
    Case(
        "LocalQueue", "localqueues", True, V1BETA1,
        spec={"clusterQueue": "cq"},
        status={"flavorUsage": USAGE, "pendingWorkloads": 1},
        expected={"status": {"flavorsUsage": USAGE, "pendingWorkloads": 1}},
        absent=("status.flavorUsage",),
    ),
    Case(
        "LocalQueue", "localqueues", True, V1BETA2,
        spec={"clusterQueue": "cq"},
        status={"flavorsUsage": USAGE},
        expected={"status": {"flavorUsage": USAGE}},
        absent=("status.flavorsUsage",),
    ),
    Case(
        "Workload", "workloads", True, V1BETA1,
        spec={"queueName": "lq", "priorityClassSource": WPC_SOURCE, "priorityClassName": "high",
              "priority": 100, "podSets": POD_SETS},
        status={"accumulatedPastExexcutionTimeSeconds": 42},
        expected={"spec": {"priorityClassRef": WPC_REF, "priority": 100},
                  "status": {"accumulatedPastExecutionTimeSeconds": 42}},
        absent=("spec.priorityClassName", "spec.priorityClassSource",
                "status.accumulatedPastExexcutionTimeSeconds"),
    ),
    Case(
        "Workload", "workloads", True, V1BETA2,
        spec={"queueName": "lq", "priorityClassRef": WPC_REF, "priority": 100,
              "preemptionGates": [{"name": "wait-for-me"}], "podSets": POD_SETS},
        status={"accumulatedPastExecutionTimeSeconds": 42,
                "preemptionGates": [{"name": "wait-for-me", "position": "Closed",
                                     "lastTransitionTime": AT}]},
        expected={"spec": {"priorityClassName": "high", "priorityClassSource": WPC_SOURCE},
                  "status": {"accumulatedPastExexcutionTimeSeconds": 42}},
        absent=("spec.priorityClassRef", "spec.preemptionGates", "status.preemptionGates",
                "status.accumulatedPastExecutionTimeSeconds"),
    ),
    Case(
        "Cohort", "cohorts", False, V1BETA1,
        spec={"parentName": "root"},
        status={"fairSharing": {"weightedShare": 3, "admissionFairSharingStatus": {
            "consumedResources": {"cpu": "2"}, "lastUpdate": AT}}},
        expected={"spec": {"parentName": "root"}, "status": {"fairSharing": {"weightedShare": 3}}},
        absent=("status.fairSharing.admissionFairSharingStatus",),
    ),
    Case(
        "Cohort", "cohorts", False, V1BETA2,
        spec={"parentName": "root"},
        status={"fairSharing": {"weightedShare": 3}},
        expected={"spec": {"parentName": "root"}, "status": {"fairSharing": {"weightedShare": 3}}},
    ),
    Case(
        "AdmissionCheck", "admissionchecks", False, V1BETA1,
        spec={"controllerName": "example.com/check", "retryDelayMinutes": 3},
        status=None,
        expected={"spec": {"controllerName": "example.com/check"}},
        absent=("spec.retryDelayMinutes",),
    ),
    Case(
        "AdmissionCheck", "admissionchecks", False, V1BETA2,
        spec={"controllerName": "example.com/check"},
        status=None,
        # v1beta1's default, as a v1beta1 client of Kueue reads it.
        expected={"spec": {"controllerName": "example.com/check", "retryDelayMinutes": 15}},
    ),
)  # fmt: skip


def contains(actual: Any, expected: Any) -> bool:
    """Whether ``actual`` has every field of ``expected`` with its value (lists whole)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and contains(actual[key], value) for key, value in expected.items()
        )
    return bool(actual == expected)


def missing(obj: dict[str, Any], paths: tuple[str, ...]) -> bool:
    """Whether none of the dotted ``paths`` is in ``obj``."""
    for path in paths:
        node: Any = obj
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            return False
    return True
