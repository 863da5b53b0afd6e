"""Requests as RBAC tests make them: kubectl apply, ServiceAccount tokens, raw HTTP with a
given bearer token, ``kubectl auth can-i``."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from tests.harness import Cluster

RBAC = "rbac.authorization.k8s.io"


def apply(cluster: Cluster, cache: Path, *docs: dict[str, Any]) -> None:
    body = yaml.safe_dump_all(docs)
    done = cluster.kubectl("apply", "-f", "-", input=body, cache_dir=cache)
    assert done.returncode == 0, done.stderr


def role(ns: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": ns}, "rules": rules}  # fmt: skip


def binding(ns: str, name: str, role_name: str, sa: str, kind: str = "Role") -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role_name},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
    }  # fmt: skip


def service_account(ns: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": ns}}  # fmt: skip


def token(cluster: Cluster, cache: Path, ns: str, sa: str) -> str:
    done = cluster.kubectl("create", "token", sa, "-n", ns, cache_dir=cache)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def tls(cluster: Cluster) -> ssl.SSLContext:
    """Trust the cluster's CA, inline (embedded) or in a file (real)."""
    entry = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]
    if "certificate-authority-data" in entry:
        ca = base64.b64decode(entry["certificate-authority-data"]).decode()
        return ssl.create_default_context(cadata=ca)
    return ssl.create_default_context(cafile=entry["certificate-authority"])


def http(
    cluster: Cluster,
    method: str,
    path: str,
    bearer: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    content_type: str = "application/json",
) -> tuple[int, dict[str, Any]]:
    """One raw request with ``bearer``; the status code and the JSON answer."""
    context = tls(cluster)
    sent = {"Authorization": f"Bearer {bearer}", "Content-Type": content_type, **(headers or {})}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(cluster.server + path, data, sent, method=method)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def can_i(cluster: Cluster, cache: Path, *args: str) -> bool:
    done = cluster.kubectl("auth", "can-i", *args, cache_dir=cache)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.strip() == "yes"


def http_status(cluster: Cluster, path: str, bearer: str) -> int:
    """The status of a GET whose body may be a stream (a watch)."""
    context = tls(cluster)
    request = urllib.request.Request(
        cluster.server + path, headers={"Authorization": f"Bearer {bearer}"}
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            answer.read()
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
