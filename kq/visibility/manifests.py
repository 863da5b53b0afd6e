"""The APIServices and Service through which the API server reaches the visibility API, as
upstream names them (``deploy/visibility.yaml`` holds the same for a cluster)."""

from __future__ import annotations

from typing import Any

from kq.visibility.summary import GROUP, VERSIONS

SERVICE = "kueue-visibility-server"
SERVICE_PORT = 443
API_SERVICE = "apiregistration.k8s.io/v1"


def api_service_name(version: str) -> str:
    return f"{version}.{GROUP}"


def api_services(namespace: str, port: int = SERVICE_PORT) -> list[dict[str, Any]]:
    """One per served version; the serving certificate is not checked, as upstream's."""
    return [
        {
            "apiVersion": API_SERVICE,
            "kind": "APIService",
            "metadata": {"name": api_service_name(version)},
            "spec": {
                "group": GROUP,
                "version": version,
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
                "insecureSkipTLSVerify": True,
                "service": {"name": SERVICE, "namespace": namespace, "port": port},
            },
        }
        for version in VERSIONS
    ]


def external_service(namespace: str, host: str) -> dict[str, Any]:
    """The Service for a visibility server outside the cluster network (``kq dev``, tests):
    the API server sends to ``host`` at the APIService's port."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": namespace},
        "spec": {"type": "ExternalName", "externalName": host},
    }
