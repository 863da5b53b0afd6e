"""AdmissionCheck and ProvisioningRequestConfig."""

from __future__ import annotations

from typing import Any

from kq.crds.core import conditions
from kq.crds.kueue.common import kueue_crd
from kq.crds.schema import array, dns_label, dns_subdomain, integer, map_of, obj, string


def admission_check() -> dict[str, Any]:
    """AdmissionCheck: an extra gate a workload must pass after quota reservation."""
    spec = obj(
        {
            "controllerName": string(description="Controller that owns the check (immutable)."),
            "retryDelayMinutes": integer(
                fmt="int64",
                default=15,
                description="Minutes a failed check keeps the workload suspended before retrying.",
            ),
            "parameters": obj(
                {
                    "apiGroup": dns_subdomain(),
                    "kind": string(max_length=63, pattern=r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$"),
                    "name": dns_label(),
                },
                required=("apiGroup", "kind", "name"),
                description="Object configuring the check, e.g. a ProvisioningRequestConfig.",
            ),
        },
        required=("controllerName",),
    )
    status = obj({"conditions": conditions(description="Active tells whether it is usable.")})
    return kueue_crd(
        "AdmissionCheck",
        "admissionchecks",
        namespaced=False,
        short_names=("ac",),
        spec=spec,
        status=status,
    )


def provisioning_request_config() -> dict[str, Any]:
    """ProvisioningRequestConfig: parameters of the ProvisioningRequest admission check."""
    retry_defaults = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
    spec = obj(
        {
            "provisioningClassName": dns_subdomain(
                description="Class of the ProvisioningRequests created, e.g. "
                "queued-provisioning.gke.io."
            ),
            "parameters": map_of(
                string(max_length=255),
                max_properties=100,
                description="Parameters copied into every ProvisioningRequest.",
            ),
            "managedResources": array(
                string(),
                list_type="set",
                max_items=100,
                description="Only podSets requesting one of these resources are provisioned; "
                "empty means all.",
            ),
            "retryStrategy": obj(
                {
                    "backoffLimitCount": integer(
                        default=3, description="Retries before the check is Rejected."
                    ),
                    "backoffBaseSeconds": integer(
                        default=60, description="First retry delay, doubled on each attempt."
                    ),
                    "backoffMaxSeconds": integer(default=1800, description="Retry delay cap."),
                },
                default=retry_defaults,
            ),
            "podSetUpdates": obj(
                {
                    "nodeSelector": array(
                        obj(
                            {
                                "key": string(min_length=1, max_length=317),
                                "valueFromProvisioningClassDetail": string(
                                    min_length=1, max_length=32768
                                ),
                            },
                            required=("key", "valueFromProvisioningClassDetail"),
                        ),
                        max_items=8,
                        description="Node labels filled from provisioningClassDetails.",
                    )
                }
            ),
            "podSetMergePolicy": string(
                enum=("IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"),
                description="How podSets are merged into one ProvisioningRequest podSet.",
            ),
        },
        required=("provisioningClassName",),
    )
    return kueue_crd(
        "ProvisioningRequestConfig",
        "provisioningrequestconfigs",
        namespaced=False,
        short_names=("prc",),
        spec=spec,
    )
