"""kueue.x-k8s.io: the queueing API, written here as v1beta1, the version kq itself reads;
``kq.crds.kueue.v1beta2`` derives the v1beta2 version served beside it.

Field names, enums, defaults, short names and printer columns follow upstream Kueue's v1beta1
types so `kubectl get` and `kubectl apply` behave as they do against Kueue. One module per
family of kinds: ``queues`` (ClusterQueue, LocalQueue, Cohort), ``workloads`` (Workload,
WorkloadPriorityClass), ``nodes`` (ResourceFlavor, Topology), ``checks`` (AdmissionCheck,
ProvisioningRequestConfig); ``common`` holds what they share.
"""

from __future__ import annotations

from typing import Any

from kq.crds.kueue.checks import admission_check, provisioning_request_config
from kq.crds.kueue.common import GROUP
from kq.crds.kueue.nodes import resource_flavor, topology
from kq.crds.kueue.queues import cluster_queue, cohort, local_queue
from kq.crds.kueue.v1beta2 import with_v1beta2
from kq.crds.kueue.workloads import workload, workload_priority_class

__all__ = ["GROUP", "crds"]


def crds() -> list[dict[str, Any]]:
    """Every kueue.x-k8s.io CRD kq serves, each in v1beta1 and v1beta2."""
    v1beta1 = [
        resource_flavor(),
        cluster_queue(),
        local_queue(),
        workload(),
        workload_priority_class(),
        admission_check(),
        provisioning_request_config(),
        cohort(),
        topology(),
    ]
    return [with_v1beta2(crd) for crd in v1beta1]
