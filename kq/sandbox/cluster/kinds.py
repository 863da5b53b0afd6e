"""Which kinds the simulated cluster plays, as the API server it drives serves them.

Nodes, Pods, Jobs and the built-in serving kinds always; JobSets, RayJobs, RayClusters, MPIJobs
(with the ConfigMaps that hold their hostfiles), LeaderWorkerSets and ProvisioningRequests (with
their PodTemplates) only when served, since a bare kube-apiserver may lack their CRDs.
"""

from __future__ import annotations

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import JOBS, PODS, WORKLOADS, Resource
from kq.sandbox.cluster import serving

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
POD_TEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate", namespaced=True)
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", namespaced=True)
RAYJOBS = Resource("ray.io", "v1", "rayjobs", "RayJob", namespaced=True)
RAYCLUSTERS = Resource("ray.io", "v1", "rayclusters", "RayCluster", namespaced=True)
MPIJOBS = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob", namespaced=True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
_OPTIONAL = (JOBSETS, RAYJOBS, RAYCLUSTERS, MPIJOBS, serving.LEADERWORKERSETS)
_PROVISIONING_GROUP = "autoscaling.x-k8s.io"


async def served(client: KubeClient, group_version: str, plural: str) -> bool:
    """Whether the server's discovery lists ``plural`` (a resource or ``x/subresource``)."""
    path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
    try:
        listing = await client.request("GET", path)
    except ApiError as exc:
        if exc.not_found:
            return False
        raise
    return any(r.get("name") == plural for r in listing.get("resources") or ())


async def discover(client: KubeClient, *, workloads: bool) -> dict[str, Resource]:
    """The kinds to watch and write, by kind; ``workloads`` adds Kueue's Workloads (the garbage
    collector's business, which the simulated cluster takes on against a bare server)."""
    resources: dict[str, Resource] = {"Node": NODES, "Pod": PODS, "Job": JOBS, **serving.BUILTIN}
    for resource in _OPTIONAL:
        if await served(client, resource.api_version, resource.plural):
            resources[resource.kind] = resource
    if "MPIJob" in resources:
        resources["ConfigMap"] = CONFIGMAPS  # the hostfile
    for version in ("v1", "v1beta1"):
        if await served(client, f"{_PROVISIONING_GROUP}/{version}", "provisioningrequests"):
            resources["ProvisioningRequest"] = Resource(
                _PROVISIONING_GROUP, version, "provisioningrequests", "ProvisioningRequest",
                namespaced=True,
            )  # fmt: skip
            resources["PodTemplate"] = POD_TEMPLATES
            break
    if workloads:
        resources["Workload"] = WORKLOADS
    return resources
