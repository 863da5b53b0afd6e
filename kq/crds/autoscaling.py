"""autoscaling.x-k8s.io ProvisioningRequest: ask the autoscaler for capacity for a set of pods.

v1 (storage) and v1beta1 share one schema, so they convert without a webhook.
"""

from __future__ import annotations

from typing import Any

from kq.crds.core import conditions
from kq.crds.schema import (
    AGE_COLUMN,
    Version,
    array,
    crd,
    dns_subdomain,
    integer,
    map_of,
    obj,
    string,
)

GROUP = "autoscaling.x-k8s.io"


def provisioning_request() -> dict[str, Any]:
    """ProvisioningRequest, served as v1 and v1beta1."""
    pod_set = obj(
        {
            "podTemplateRef": obj(
                {"name": dns_subdomain(description="PodTemplate in the same namespace.")},
                required=("name",),
            ),
            "count": integer(minimum=1, description="Number of pods like the template."),
        },
        required=("podTemplateRef", "count"),
    )
    spec = obj(
        {
            "provisioningClassName": dns_subdomain(
                description="How capacity is provisioned, e.g. queued-provisioning.gke.io or "
                "check-capacity.autoscaling.x-k8s.io (immutable)."
            ),
            "podSets": array(pod_set, min_items=1, max_items=32),
            "parameters": map_of(
                string(max_length=255),
                max_properties=100,
                description="Class-specific parameters, e.g. maxRunDurationSeconds.",
            ),
        },
        required=("provisioningClassName", "podSets"),
    )
    status = obj(
        {
            "conditions": conditions(
                description="Accepted, Provisioned, Failed, BookingExpired, CapacityRevoked."
            ),
            "provisioningClassDetails": map_of(
                string(max_length=32768),
                max_properties=64,
                description="Class-specific details of the provisioned capacity.",
            ),
        }
    )
    versions = [
        Version(
            name,
            spec,
            status,
            storage=name == "v1",
            printer_columns=(AGE_COLUMN,),
            required=("spec",),
        )
        for name in ("v1", "v1beta1")
    ]
    return crd(
        group=GROUP,
        kind="ProvisioningRequest",
        plural="provisioningrequests",
        namespaced=True,
        versions=versions,
        short_names=("provreq", "provreqs"),
    )


def crds() -> list[dict[str, Any]]:
    """Every autoscaling.x-k8s.io CRD kq serves."""
    return [provisioning_request()]
