"""Fixtures of the API-server suites: a unique namespace, a CRD, a kubernetes_asyncio client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client, config

from tests.harness import Cluster

GROUP_SUFFIX = "kqtest.example.com"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def widget_crd(group: str) -> dict[str, object]:
    """A namespaced CRD with a status subresource, printer columns, defaults and an enum."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                        {
                            "name": "Ready",
                            "type": "string",
                            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                        },
                        {
                            "name": "Owner",
                            "type": "string",
                            "jsonPath": ".spec.owner",
                            "priority": 1,
                        },
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "required": ["size"],
                                    "properties": {
                                        "size": {"type": "integer", "minimum": 1},
                                        "color": {
                                            "type": "string",
                                            "default": "blue",
                                            "enum": ["blue", "red"],
                                        },
                                        "owner": {"type": "string"},
                                        "tags": {"type": "array", "items": {"type": "string"}},
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {
                                        "phase": {"type": "string"},
                                        "conditions": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "properties": {
                                                    "type": {"type": "string"},
                                                    "status": {"type": "string"},
                                                },
                                            },
                                        },
                                    },
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="session")
def widget_group(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A session-wide Widget CRD in its own group; returns the group."""
    group = f"{uuid.uuid4().hex[:6]}.{GROUP_SUFFIX}"
    cache = tmp_path_factory.mktemp("crd-cache")
    result = cluster.kubectl(
        "apply", "-f", "-", input=yaml.safe_dump(widget_crd(group)), cache_dir=cache
    )
    assert result.returncode == 0, result.stderr
    wait = cluster.kubectl(
        "wait",
        "--for=condition=Established",
        f"crd/widgets.{group}",
        "--timeout=30s",
        cache_dir=cache,
    )
    assert wait.returncode == 0, wait.stderr
    return group


@pytest.fixture
def namespace(cluster: Cluster, tmp_path: Path) -> Iterator[str]:
    name = unique("ns")
    body = yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    cache = tmp_path / "ns-cache"
    created = cluster.kubectl("apply", "-f", "-", input=body, cache_dir=cache)
    assert created.returncode == 0, created.stderr
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", cache_dir=cache)


@pytest.fixture
async def api(cluster: Cluster) -> AsyncIterator[client.ApiClient]:
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=cfg)
    async with client.ApiClient(cfg) as api_client:
        yield api_client


@pytest.fixture
def controllers(cluster: Cluster) -> None:
    """Skip on the real backend: it runs no kube-controller-manager (GC, namespace cleanup)."""
    if cluster.backend != "embedded":
        pytest.skip("needs kube-controller-manager's garbage and namespace controllers")
