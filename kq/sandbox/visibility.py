"""The visibility API of ``kq dev``: its APIServices point the embedded API server at the
controller's visibility server on loopback, through an ExternalName Service."""

from __future__ import annotations

from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import Resource
from kq.visibility.manifests import api_services, external_service

API_SERVICES = Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService", False)
SERVICES = Resource("", "v1", "services", "Service", True)


async def register_visibility(client: KubeClient, namespace: str, port: int) -> None:
    """Create or replace the Service and APIServices (a restarted sandbox serves on a new
    port). ``namespace`` must exist."""
    await _recreate(client, SERVICES, external_service(namespace, "127.0.0.1"))
    for api in api_services(namespace, port):
        await _recreate(client, API_SERVICES, api)


async def _recreate(client: KubeClient, resource: Resource, body: dict[str, Any]) -> None:
    meta = body["metadata"]
    try:
        await client.delete(resource, meta["name"], meta.get("namespace"))
    except ApiError as exc:
        if exc.status != 404:
            raise
    await client.create(resource, body)
