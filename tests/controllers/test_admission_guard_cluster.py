"""``kq run``'s webhook refuses ``status.admission`` changes from anyone but kq itself.

A ServiceAccount allowed by RBAC to patch Workload status in its namespace (what a team's
tooling may hold) still cannot write an admission: the webhook on ``workloads/status`` says
why. kq's own admissions go through the same webhook. kq learns who it is with a
SelfSubjectReview, which both API servers answer.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.controllers.helpers import (
    apply,
    cluster_queue,
    flavor,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.harness import Cluster, wait_until
from tests.kqrun import free_port, kq_run, webhook_ca

pytestmark = pytest.mark.slow

FORGED = {
    "status": {
        "admission": {
            "clusterQueue": "somewhere",
            "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "x"}, "resourceUsage": {"cpu": "1"}, "count": 1}
            ],
        }
    }
}


def rbac(ns: str) -> list[dict[str, Any]]:
    group = "rbac.authorization.k8s.io"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "team", "namespace": ns}},
        {"apiVersion": f"{group}/v1", "kind": "Role",
         "metadata": {"name": "workload-status", "namespace": ns},
         "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "workloads/status"],
                    "verbs": ["get", "patch"]}]},
        {"apiVersion": f"{group}/v1", "kind": "RoleBinding",
         "metadata": {"name": "workload-status", "namespace": ns},
         "roleRef": {"apiGroup": group, "kind": "Role", "name": "workload-status"},
         "subjects": [{"kind": "ServiceAccount", "name": "team", "namespace": ns}]},
    ]  # fmt: skip


def guard(
    name: str,
    port: int,
    ca: bytes,
    ns: str,
    operations: tuple[str, ...] = ("UPDATE",),
    resource: str = "workloads/status",
) -> dict[str, Any]:
    """deploy/webhooks.yaml's rule for Workloads (by default their status updates), by URL and
    limited to this test's namespace."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": "vworkloads.kq.kueue.x-k8s.io",
            "clientConfig": {"url": f"https://127.0.0.1:{port}/validate/kueue",
                             "caBundle": base64.b64encode(ca).decode()},
            "rules": [{"apiGroups": ["kueue.x-k8s.io"], "apiVersions": ["v1beta1"],
                       "operations": list(operations), "resources": [resource]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "failurePolicy": "Fail", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 10,
        }],
    }  # fmt: skip


def test_only_kq_writes_status_admission(cluster: Cluster, tmp_path: Path) -> None:
    cache, s = tmp_path / "cache", suffix()
    ns, rf, cq, hook = f"guard-{s}", f"rf-{s}", f"cq-{s}", f"kq-guard-{s}"
    apply(cluster, cache, namespace(ns), flavor(rf), cluster_queue(cq, rf, "cpu", 4),
          local_queue(ns, "lq", cq), *rbac(ns))  # fmt: skip
    port = free_port()
    run = tmp_path / "run"
    with kq_run(cluster, run, ns, webhook_port=port):
        apply(cluster, cache, guard(hook, port, webhook_ca(run, port), ns))
        try:
            # kq's own admission passes the webhook.
            apply(cluster, cache, workload(ns, "mine", "lq", {"cpu": 1}))
            admitted = cluster.kubectl(
                "wait", "--for=condition=Admitted", "workload/mine", "-n", ns, "--timeout=60s",
                cache_dir=cache,
            )  # fmt: skip
            assert admitted.returncode == 0, admitted.stderr
            team = f"--as=system:serviceaccount:{ns}:team"
            apply(cluster, cache, workload(ns, "theirs", "lq", {"cpu": 100}))

            def patch(body: dict[str, Any], *extra: str) -> Any:
                return cluster.kubectl(
                    "patch", "workload", "theirs", "-n", ns, "--subresource=status",
                    "--type=merge", "-p", json.dumps(body), team, *extra, cache_dir=cache,
                )  # fmt: skip

            # kube-apiserver picks the configuration up from a watch: probe with dry runs,
            # which are reviewed too but change nothing.
            wait_until(
                lambda: patch(FORGED, "--dry-run=server").returncode != 0,
                "the webhook to be called",
                interval=0.2,
            )
            refused = patch(FORGED)
            assert refused.returncode != 0
            assert "status.admission is written by kq only" in refused.stderr
            assert f"system:serviceaccount:{ns}:team may not set" in refused.stderr
            # Other status fields stay theirs to write (RBAC decides those).
            allowed = patch({"status": {"reclaimablePods": [{"name": "main", "count": 0}]}})
            assert allowed.returncode == 0, allowed.stderr
        finally:
            cluster.kubectl("delete", "validatingwebhookconfiguration", hook, cache_dir=cache)
