"""deploy/visibility.yaml matches what ``kq run`` serves and reads, and the API server grants
kq the one ConfigMap it reads to trust the front proxy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kq.config import VisibilityServer
from kq.visibility.auth import AUTH_CONFIG_MAP
from kq.visibility.manifests import SERVICE, api_services
from tests.harness import REPO, Cluster

DEPLOY = REPO / "deploy"
NAMESPACE = "kq-system"
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:kq-controller-manager"


def documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / "visibility.yaml").read_text()) if d]


def test_api_services_are_the_ones_kq_dev_registers() -> None:
    deployed = [d for d in documents() if d["kind"] == "APIService"]
    for doc in deployed:
        doc["metadata"].pop("labels")
    by_name = sorted(api_services(NAMESPACE), key=lambda a: a["metadata"]["name"])
    assert sorted(deployed, key=lambda a: a["metadata"]["name"]) == by_name


def test_the_service_reaches_the_visibility_port() -> None:
    [service] = [d for d in documents() if d["kind"] == "Service"]
    assert service["metadata"] == {
        "name": SERVICE,
        "namespace": NAMESPACE,
        "labels": {"app.kubernetes.io/name": "kq"},
    }
    [port] = service["spec"]["ports"]
    assert port["port"] == 443
    [deployment] = yaml.safe_load_all((DEPLOY / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports[port["targetPort"]] == VisibilityServer().bind_port
    assert "visibility.yaml" in (DEPLOY / "kustomization.yaml").read_text()


def test_the_service_account_may_read_the_front_proxy_settings(
    cluster: Cluster, kubectl_cache: Path
) -> None:
    [binding] = [d for d in documents() if d["kind"] == "RoleBinding"]
    done = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(binding),
                           cache_dir=kubectl_cache)  # fmt: skip
    assert done.returncode == 0, done.stderr
    namespace, name = AUTH_CONFIG_MAP

    def can(*args: str) -> bool:
        done = cluster.kubectl("auth", "can-i", *args, "-n", namespace,
                               f"--as={SERVICE_ACCOUNT}", cache_dir=kubectl_cache)  # fmt: skip
        return done.stdout.strip() == "yes"

    assert can("get", f"configmaps/{name}")
    assert not can("get", "configmaps/other")
