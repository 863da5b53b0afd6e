"""A static table of the resources kq reads and writes, in place of API discovery."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    """One API resource: where it lives and whether its objects belong to a namespace."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The collection (no name) or object URL path; no namespace lists across all."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            prefix += f"/namespaces/{quote(namespace, safe='')}"
        prefix += f"/{self.plural}"
        return f"{prefix}/{quote(name, safe='')}" if name else prefix


KUEUE = "kueue.x-k8s.io"

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
PODS = Resource("", "v1", "pods", "Pod", namespaced=True)
LIMIT_RANGES = Resource("", "v1", "limitranges", "LimitRange", namespaced=True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
JOBS = Resource("batch", "v1", "jobs", "Job", namespaced=True)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)

RESOURCE_FLAVORS = Resource(KUEUE, "v1beta1", "resourceflavors", "ResourceFlavor", False)
CLUSTER_QUEUES = Resource(KUEUE, "v1beta1", "clusterqueues", "ClusterQueue", False)
LOCAL_QUEUES = Resource(KUEUE, "v1beta1", "localqueues", "LocalQueue", True)
WORKLOADS = Resource(KUEUE, "v1beta1", "workloads", "Workload", True)
WORKLOAD_PRIORITY_CLASSES = Resource(
    KUEUE, "v1beta1", "workloadpriorityclasses", "WorkloadPriorityClass", False
)
ADMISSION_CHECKS = Resource(KUEUE, "v1beta1", "admissionchecks", "AdmissionCheck", False)
PROVISIONING_REQUEST_CONFIGS = Resource(
    KUEUE, "v1beta1", "provisioningrequestconfigs", "ProvisioningRequestConfig", False
)
COHORTS = Resource(KUEUE, "v1beta1", "cohorts", "Cohort", False)
TOPOLOGIES = Resource(KUEUE, "v1beta1", "topologies", "Topology", False)
BUDGETS = Resource("kq.dev", "v1alpha1", "budgets", "Budget", namespaced=False)
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False)

KUEUE_KINDS = (
    RESOURCE_FLAVORS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    WORKLOADS,
    WORKLOAD_PRIORITY_CLASSES,
    ADMISSION_CHECKS,
    PROVISIONING_REQUEST_CONFIGS,
    COHORTS,
    TOPOLOGIES,
)

VALIDATING_WEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
MUTATING_WEBHOOKS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
SECRETS = Resource("", "v1", "secrets", "Secret", namespaced=True)
CUSTOM_RESOURCE_DEFINITIONS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
