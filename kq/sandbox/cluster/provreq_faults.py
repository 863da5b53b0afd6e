"""Faults a person injects into a sandbox's ProvisioningRequests (``kq dev provreq ...``).

The simulated autoscaler provisions every request it can; these make one fail, lose its
capacity or end its booking, as a real autoscaler may, so each path of the provisioning
admission check can be watched. The injected reasons say they were injected.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.resources import Resource
from kq.sandbox.cluster.clock import rfc3339

PROVISIONING_REQUESTS = Resource(
    "autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest", namespaced=True
)

# fault: (condition type, reason, default message)
FAULTS = {
    "fail": ("Failed", "InjectedFailure", "Provisioning failed (injected with kq dev provreq)"),
    "revoke": (
        "CapacityRevoked",
        "InjectedRevocation",
        "The provisioned capacity was revoked (injected with kq dev provreq)",
    ),
    "expire": (
        "BookingExpired",
        "CapacityReservationTimeExpired",
        "Capacity booking expired (injected with kq dev provreq)",
    ),
}


async def inject(
    client: KubeClient, namespace: str, name: str, fault: str, message: str | None = None
) -> dict[str, Any]:
    """Set the fault's condition on the request's status; returns the condition written."""
    type_, reason, default = FAULTS[fault]
    request = await client.get(PROVISIONING_REQUESTS, name, namespace)
    status = request.get("status") or {}
    conditions = [c for c in status.get("conditions") or () if c.get("type") != type_]
    new = {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": message or default,
        "observedGeneration": int(request["metadata"].get("generation") or 1),
        "lastTransitionTime": rfc3339(datetime.now(UTC)),
    }
    await client.merge_patch(
        PROVISIONING_REQUESTS,
        name,
        {"status": {"conditions": [*conditions, new]}},
        namespace=namespace,
        resource_version=request["metadata"].get("resourceVersion"),
        subresource="status",
    )
    return new
