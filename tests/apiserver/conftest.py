"""Fixtures of the API-server suites: a unique namespace, a CRD, a kubernetes_asyncio client."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from tests.harness import Cluster

GROUP_SUFFIX = "kqtest.example.com"

# The stubs kubernetes_asyncio ships (*.pyi) are narrower than the client: they type every request
# body as its model class, each optional parameter as non-None, leave out `_content_type`, and
# say ApiException.body is bytes. The client sends a dict body as it is, omits a None parameter,
# honours `_content_type` and decodes the body. These suites send raw JSON on purpose, so such
# calls carry `# type: ignore[arg-type]` or `[call-arg]`, and `error_body` narrows the body.


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def error_body(exc: ApiException) -> str:
    """The body of a failed call's response: the client decodes it, though its stubs say bytes."""
    body: object = exc.body
    assert isinstance(body, str), f"undecoded response body: {body!r}"
    return body


def kubectl_watching(process: subprocess.Popen[str]) -> None:
    """Return once ``process``, a kubectl run with ``-v=6``, has its watch answered: it logs
    each response to stderr, a watch's as soon as the server accepts it."""
    assert process.stderr is not None
    for line in process.stderr:
        if "watch=true" in line:
            return
    raise AssertionError(f"kubectl exited (code {process.wait()}) before it watched")


def widget_crd(group: str) -> dict[str, Any]:
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
