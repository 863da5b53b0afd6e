"""The generated CRDs: structural, complete, and matching upstream's names, defaults and columns."""

from __future__ import annotations

from typing import Any

import pytest

from kq.crds import builtin_crds, crds_by_group
from kq.crds.schema import array, obj, quantity, string
from kq.sandbox.apiserver import schema as server_schema
from tests.crds.schema_check import apply, structural_errors

CRDS = builtin_crds()
BY_KIND = {crd["spec"]["names"]["kind"]: crd for crd in CRDS}


def _schema(kind: str, version: str | None = None) -> dict[str, Any]:
    versions = BY_KIND[kind]["spec"]["versions"]
    chosen = next(v for v in versions if version is None or v["name"] == version)
    schema: dict[str, Any] = chosen["schema"]["openAPIV3Schema"]
    return schema


def _at(schema: dict[str, Any], dotted: str) -> dict[str, Any]:
    """The schema node at a dotted path; `[]` steps into array items."""
    node = schema
    for part in dotted.split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


def _columns(kind: str) -> list[tuple[str, str, str, int]]:
    version = BY_KIND[kind]["spec"]["versions"][0]
    return [
        (c["name"], c["type"], c["jsonPath"], c.get("priority", 0))
        for c in version.get("additionalPrinterColumns", [])
    ]


def test_builtin_crds_lists_every_kind_once_in_a_stable_order() -> None:
    names = [crd["metadata"]["name"] for crd in CRDS]
    assert names == [crd["metadata"]["name"] for crd in builtin_crds()]
    assert len(set(names)) == len(names)
    assert set(BY_KIND) == {
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "Workload",
        "WorkloadPriorityClass",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
        "Cohort",
        "Topology",
        "JobSet",
        "RayJob",
        "RayCluster",
        "MPIJob",
        "ProvisioningRequest",
        "LeaderWorkerSet",
        "Budget",
    }
    assert list(crds_by_group()) == [
        "kueue.x-k8s.io",
        "jobset.x-k8s.io",
        "ray.io",
        "kubeflow.org",
        "autoscaling.x-k8s.io",
        "leaderworkerset.x-k8s.io",
        "kq.dev",
    ]


def test_builtin_crds_returns_independent_copies() -> None:
    first = builtin_crds()
    first[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] = "mutated"
    assert builtin_crds()[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] == (
        "object"
    )


@pytest.mark.parametrize("crd", CRDS, ids=lambda crd: crd["metadata"]["name"])
def test_every_crd_is_a_well_formed_structural_crd(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
    assert spec["scope"] in ("Namespaced", "Cluster")
    assert sum(v["storage"] for v in spec["versions"]) == 1
    for version in spec["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        assert structural_errors(schema) == [], version["name"]
        assert server_schema.structural_errors(schema) == [], version["name"]
        assert set(schema["properties"]) >= {"apiVersion", "kind", "metadata"}
        assert ("status" in schema["properties"]) == ("status" in version.get("subresources", {}))


@pytest.mark.parametrize(
    ("kind", "group", "versions", "scope", "short_names"),
    [
        (
            "ResourceFlavor",
            "kueue.x-k8s.io",
            ["v1beta1", "v1beta2"],
            "Cluster",
            ["flavor", "flavors", "rf"],
        ),
        ("ClusterQueue", "kueue.x-k8s.io", ["v1beta1", "v1beta2"], "Cluster", ["cq"]),
        (
            "LocalQueue",
            "kueue.x-k8s.io",
            ["v1beta1", "v1beta2"],
            "Namespaced",
            ["queue", "queues", "lq"],
        ),
        (
            "Workload",
            "kueue.x-k8s.io",
            ["v1beta1", "v1beta2"],
            "Namespaced",
            ["kwl", "kueueworkload", "kueueworkloads"],
        ),
        ("WorkloadPriorityClass", "kueue.x-k8s.io", ["v1beta1", "v1beta2"], "Cluster", ["wpc"]),
        ("AdmissionCheck", "kueue.x-k8s.io", ["v1beta1", "v1beta2"], "Cluster", ["ac"]),
        ("ProvisioningRequestConfig", "kueue.x-k8s.io", ["v1beta1", "v1beta2"], "Cluster", ["prc"]),
        ("Cohort", "kueue.x-k8s.io", ["v1beta1", "v1beta2"], "Cluster", ["co"]),
        ("Topology", "kueue.x-k8s.io", ["v1beta1", "v1beta2"], "Cluster", ["topo"]),
        ("JobSet", "jobset.x-k8s.io", ["v1alpha2"], "Namespaced", []),
        ("RayJob", "ray.io", ["v1"], "Namespaced", []),
        ("RayCluster", "ray.io", ["v1"], "Namespaced", []),
        ("MPIJob", "kubeflow.org", ["v2beta1"], "Namespaced", []),
        (
            "ProvisioningRequest",
            "autoscaling.x-k8s.io",
            ["v1", "v1beta1"],
            "Namespaced",
            ["provreq", "provreqs"],
        ),
    ],
)
def test_names_scope_and_versions_match_upstream(
    kind: str, group: str, versions: list[str], scope: str, short_names: list[str]
) -> None:
    spec = BY_KIND[kind]["spec"]
    assert spec["group"] == group
    assert [v["name"] for v in spec["versions"]] == versions
    # Kueue v0.19 stores v1beta2; the other groups store their first version.
    storage = "v1beta2" if group == "kueue.x-k8s.io" else versions[0]
    assert [v["name"] for v in spec["versions"] if v["storage"]] == [storage]
    assert spec["scope"] == scope
    assert spec["names"].get("shortNames", []) == short_names
    if group == "kueue.x-k8s.io":
        assert spec["names"]["categories"] == ["kueue"]


def test_kueue_printer_columns_match_upstream() -> None:
    assert _columns("ClusterQueue") == [
        ("Cohort", "string", ".spec.cohort", 0),
        ("Strategy", "string", ".spec.queueingStrategy", 1),
        ("Pending Workloads", "integer", ".status.pendingWorkloads", 0),
        ("Admitted Workloads", "integer", ".status.admittedWorkloads", 1),
    ]
    assert _columns("LocalQueue") == [
        ("ClusterQueue", "string", ".spec.clusterQueue", 0),
        ("Pending Workloads", "integer", ".status.pendingWorkloads", 0),
        ("Admitted Workloads", "integer", ".status.admittedWorkloads", 0),
    ]
    assert _columns("Workload") == [
        ("Queue", "string", ".spec.queueName", 0),
        ("Reserved in", "string", ".status.admission.clusterQueue", 0),
        ("Admitted", "string", ".status.conditions[?(@.type=='Admitted')].status", 0),
        ("Finished", "string", ".status.conditions[?(@.type=='Finished')].status", 0),
        ("Priority", "integer", ".spec.priority", 1),  # kq's, for -o wide (story S2)
        ("Age", "date", ".metadata.creationTimestamp", 0),
    ]
    assert _columns("WorkloadPriorityClass") == [("Value", "integer", ".value", 0)]
    for kind in ("ResourceFlavor", "AdmissionCheck", "ProvisioningRequestConfig", "Cohort"):
        assert _columns(kind) == []


def test_job_kind_printer_columns_match_upstream() -> None:
    assert _columns("JobSet") == [
        ("TerminalState", "string", ".status.terminalState", 0),
        ("Restarts", "string", ".status.restarts", 0),
        ("Completed", "string", '.status.conditions[?(@.type=="Completed")].status', 0),
        ("Suspended", "string", ".spec.suspend", 0),
        ("Age", "date", ".metadata.creationTimestamp", 0),
    ]
    assert [c[0] for c in _columns("RayJob")] == [
        "job status",
        "deployment status",
        "ray cluster name",
        "start time",
        "end time",
        "age",
    ]
    assert _columns("ProvisioningRequest") == [("Age", "date", ".metadata.creationTimestamp", 0)]


@pytest.mark.parametrize(
    ("kind", "path", "default"),
    [
        ("ClusterQueue", "spec.queueingStrategy", "BestEffortFIFO"),
        ("ClusterQueue", "spec.stopPolicy", "None"),
        ("ClusterQueue", "spec.flavorFungibility", {}),
        ("ClusterQueue", "spec.flavorFungibility.whenCanBorrow", "MayStopSearch"),
        ("ClusterQueue", "spec.flavorFungibility.whenCanPreempt", "TryNextFlavor"),
        ("ClusterQueue", "spec.preemption", {}),
        ("ClusterQueue", "spec.preemption.reclaimWithinCohort", "Never"),
        ("ClusterQueue", "spec.preemption.withinClusterQueue", "Never"),
        ("ClusterQueue", "spec.preemption.borrowWithinCohort", {}),
        ("ClusterQueue", "spec.preemption.borrowWithinCohort.policy", "Never"),
        ("ClusterQueue", "spec.fairSharing.weight", 1),
        ("LocalQueue", "spec.stopPolicy", "None"),
        ("Workload", "spec.active", True),
        ("Workload", "spec.priorityClassSource", ""),
        ("Workload", "spec.podSets.[].name", "main"),
        ("Workload", "spec.podSets.[].count", 1),
        ("Workload", "status.admission.podSetAssignments.[].name", "main"),
        ("AdmissionCheck", "spec.retryDelayMinutes", 15),
        (
            "ProvisioningRequestConfig",
            "spec.retryStrategy",
            {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
        ),
        ("JobSet", "spec.failurePolicy.restartStrategy", "Recreate"),
        ("JobSet", "spec.replicatedJobs.[].replicas", 1),
        ("JobSet", "spec.replicatedJobs.[].groupName", "default"),
        ("RayJob", "spec.submissionMode", "K8sJobMode"),
        ("RayJob", "spec.rayClusterSpec.workerGroupSpecs.[].numOfHosts", 1),
        ("MPIJob", "spec.slotsPerWorker", 1),
        ("MPIJob", "spec.runPolicy.suspend", False),
        ("MPIJob", "spec.launcherCreationPolicy", "AtStartup"),
        ("MPIJob", "spec.mpiImplementation", "OpenMPI"),
    ],
)
def test_upstream_defaults(kind: str, path: str, default: Any) -> None:
    assert _at(_schema(kind), path)["default"] == default


@pytest.mark.parametrize(
    ("kind", "path", "values"),
    [
        ("ClusterQueue", "spec.queueingStrategy", ["StrictFIFO", "BestEffortFIFO"]),
        (
            "ClusterQueue",
            "spec.flavorFungibility.whenCanBorrow",
            ["MayStopSearch", "TryNextFlavor", "Borrow"],
        ),
        (
            "ClusterQueue",
            "spec.flavorFungibility.whenCanPreempt",
            ["MayStopSearch", "TryNextFlavor", "Preempt"],
        ),
        ("ClusterQueue", "spec.preemption.reclaimWithinCohort", ["Never", "LowerPriority", "Any"]),
        (
            "ClusterQueue",
            "spec.preemption.withinClusterQueue",
            ["Never", "LowerPriority", "LowerOrNewerEqualPriority"],
        ),
        ("ClusterQueue", "spec.preemption.borrowWithinCohort.policy", ["Never", "LowerPriority"]),
        ("ClusterQueue", "spec.stopPolicy", ["None", "Hold", "HoldAndDrain"]),
        ("Workload", "status.admissionChecks.[].state", ["Pending", "Ready", "Retry", "Rejected"]),
        (
            "JobSet",
            "spec.failurePolicy.restartStrategy",
            ["Recreate", "BlockingRecreate", "InPlaceRestart"],
        ),
        ("MPIJob", "spec.mpiImplementation", ["OpenMPI", "Intel", "MPICH"]),
    ],
)
def test_upstream_enums(kind: str, path: str, values: list[str]) -> None:
    assert _at(_schema(kind), path)["enum"] == values


def test_workload_fields_keep_upstream_spelling() -> None:
    status = _schema("Workload")["properties"]["status"]["properties"]
    assert "accumulatedPastExexcutionTimeSeconds" in status
    assignment = _at(_schema("Workload"), "status.admission.podSetAssignments.[]")
    assert {"name", "flavors", "resourceUsage", "count"} <= set(assignment["properties"])


def test_reclaim_out_of_cohort_is_accepted_and_documented_as_inert() -> None:
    node = _at(_schema("ClusterQueue"), "spec.preemption.reclaimOutOfCohort")
    assert set(node["properties"]) == {"enable", "reclaimMoreThanNominalQuota"}
    assert "does not act on it" in node["description"]


def test_pod_templates_keep_unknown_fields_but_type_what_kq_reads() -> None:
    limits: dict[str, Any] = {"google.com/tpu": 4}
    template = {
        "metadata": {"labels": {"a": "b"}, "generateName": "x-"},
        "spec": {
            "containers": [{"name": "c", "resources": {"limits": limits}}],
            "hostNetwork": True,
        },
    }
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": {"podSets": [{"template": template}]},
    }
    applied = apply(workload, _schema("Workload"))
    assert (applied.pruned, applied.errors) == ([], [])
    assert applied.obj["spec"]["podSets"] == [{"name": "main", "count": 1, "template": template}]
    limits["google.com/tpu"] = "lots"
    (error,) = apply(workload, _schema("Workload")).errors
    assert error.startswith("spec.podSets[0].template.spec.containers[0].resources.limits")
    assert "should match" in error


def test_checker_rejects_non_structural_schemas() -> None:
    assert structural_errors({"type": "object", "properties": {"a": {}}}) == [".a: no type"]
    assert structural_errors(array(obj({"k": string()}), map_keys=("k",))) == [
        ": map key k must be required or defaulted"
    ]
    assert structural_errors(quantity()) == []
    (error,) = structural_errors(string(enum=("a",), default="b"))
    assert error.startswith(": default ")
    (error,) = structural_errors({"type": "string", "enum": [1]})
    assert error.startswith(": enum value ")
