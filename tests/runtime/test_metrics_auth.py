"""``kq run`` serves /metrics as Kueue does: over HTTPS, to callers allowed to get /metrics.

The API server decides: a TokenReview says who the caller is, a SubjectAccessReview whether
they may ``get`` the non-resource URL ``/metrics`` (what Kueue's metrics-reader ClusterRole
grants). Both API servers answer those reviews.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.controllers.helpers import apply, suffix
from tests.harness import Cluster, wait_until
from tests.kqrun import free_port, kq_run

pytestmark = pytest.mark.slow


def scrape(port: int, token: str | None) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # kq's self-signed serving certificate
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def serving(port: int) -> None:
    def answers() -> bool:
        try:
            scrape(port, None)
        except (urllib.error.URLError, ConnectionError):
            return False
        return True

    wait_until(answers, "kq run's metrics server to answer", within=30)


def objects(ns: str, role: str) -> list[dict[str, Any]]:
    def account(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": ns}}  # fmt: skip

    rbac = "rbac.authorization.k8s.io/v1"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        account("reader"),
        account("stranger"),
        {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": role},
         "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
        {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": role},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": role},
         "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}]},
    ]  # fmt: skip


def test_metrics_need_a_caller_allowed_to_read_them(cluster: Cluster, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    ns, role = f"kq-system-{suffix()}", f"metrics-reader-{suffix()}"
    apply(cluster, cache, *objects(ns, role))

    def token(account: str) -> str:
        done = cluster.kubectl("create", "token", account, "-n", ns, cache_dir=cache)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    admin = yaml.safe_load(cluster.kubeconfig.read_text())["users"][0]["user"]["token"]
    port = free_port()
    with kq_run(cluster, tmp_path / "run", ns, metrics_port=port, secure_metrics=True):
        serving(port)
        assert scrape(port, None)[0] == 401
        assert scrape(port, "not-a-token")[0] == 401
        status, text = scrape(port, token("stranger"))
        assert status == 403
        assert f"user=system:serviceaccount:{ns}:stranger" in text
        for allowed in (token("reader"), admin):
            status, text = scrape(port, allowed)
            assert status == 200
            assert "kueue_build_info{" in text
