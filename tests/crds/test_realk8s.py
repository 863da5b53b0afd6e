"""A real kube-apiserver accepts deploy/crds and, under kubectl's strict validation, the examples.

Skipped unless the binaries of tests/realk8s/build.sh are built (or KQ_REALK8S=1 requires them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kq.crds import builtin_crds
from tests.crds.examples import (
    EXAMPLES,
    PROVREQ_FILE,
    PROVREQ_FILLED,
    UNPARSEABLE,
    example_files,
    relative,
    schemas,
)
from tests.realk8s.plane import binaries_built, real_control_plane

pytestmark = pytest.mark.realk8s


@dataclass(frozen=True)
class Kubectl:
    """kubectl bound to the test control plane, with its own discovery cache."""

    kubeconfig: Path
    cache_dir: Path

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run kubectl; the caller checks the outcome."""
        base = ["kubectl", "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir)]
        return subprocess.run(
            [*base, *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        """Run kubectl and return stdout, failing the test with stderr if it fails."""
        result = self.run(*args, stdin=stdin)
        assert result.returncode == 0, f"kubectl {' '.join(args)}:\n{result.stderr}"
        return result.stdout


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    if os.environ.get("KQ_REALK8S") != "1" and binaries_built() is None:
        pytest.skip(
            "real kube-apiserver/etcd not built: run tests/realk8s/build.sh "
            "(or set KQ_REALK8S=1 to build them and require these tests)"
        )
    workdir = tmp_path_factory.mktemp("crds-realk8s")
    with real_control_plane(workdir) as plane:
        client = Kubectl(plane.kubeconfig, workdir / "kubectl-cache")
        # The S4 manifests live in their own namespaces; dry runs do not create them.
        client.ok("apply", "-f", str(EXAMPLES / "s4" / "namespaces.yaml"))
        yield client


def _headers(table: str) -> list[str]:
    """Column headers of `kubectl get` output (they are separated by 2+ spaces)."""
    return re.split(r"\s{2,}", table.splitlines()[0].strip())


def _files_with_custom_objects() -> list[str]:
    groups = {group for group, _, _ in schemas()}
    found = []
    for path in example_files():
        name = relative(path)
        if name in UNPARSEABLE or name == PROVREQ_FILE:
            continue
        text = path.read_text(encoding="utf-8")
        if any(f"apiVersion: {group}/" in text for group in groups):
            found.append(name)
    return found


def test_every_crd_is_established_and_structural(kubectl: Kubectl) -> None:
    listed: dict[str, Any] = json.loads(kubectl.ok("get", "crds", "-o", "json"))
    by_name = {item["metadata"]["name"]: item for item in listed["items"]}
    for crd in builtin_crds():
        served = by_name[crd["metadata"]["name"]]
        conditions = {c["type"]: c["status"] for c in served["status"]["conditions"]}
        assert conditions.get("Established") == "True", crd["metadata"]["name"]
        assert conditions.get("NamesAccepted") == "True", crd["metadata"]["name"]
        assert "NonStructuralSchema" not in conditions, crd["metadata"]["name"]


@pytest.mark.parametrize("name", _files_with_custom_objects())
def test_example_applies_with_strict_server_side_dry_run(kubectl: Kubectl, name: str) -> None:
    out = kubectl.ok("apply", "--dry-run=server", "--validate=strict", "-f", str(EXAMPLES / name))
    assert "(server dry run)" in out


def test_filled_provisioning_request_example_applies(kubectl: Kubectl) -> None:
    text = (EXAMPLES / PROVREQ_FILE).read_text(encoding="utf-8")
    for placeholder, value in PROVREQ_FILLED.items():
        text = text.replace(placeholder, value)
    out = kubectl.ok("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=text)
    assert "provisioningrequest.autoscaling.x-k8s.io/my-request created (server dry run)" in out


def test_s2_cluster_queue_keeps_reclaim_out_of_cohort_and_gets_upstream_defaults(
    kubectl: Kubectl,
) -> None:
    kubectl.ok("apply", "--validate=strict", "-f", str(EXAMPLES / "s2" / "kueue.yaml"))
    queue = json.loads(kubectl.ok("get", "clusterqueue", "tpu-training-cq", "-o", "json"))
    spec = queue["spec"]
    assert spec["preemption"] == {
        "reclaimWithinCohort": "Never",
        "withinClusterQueue": "Never",
        "borrowWithinCohort": {"policy": "Never"},
        "reclaimOutOfCohort": {"enable": True, "reclaimMoreThanNominalQuota": False},
    }
    assert spec["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }
    assert spec["stopPolicy"] == "None"


def test_kubectl_get_prints_upstream_kueue_columns(kubectl: Kubectl) -> None:
    kubectl.ok("apply", "-f", str(EXAMPLES / "s1" / "kueue.yaml"))
    assert _headers(kubectl.ok("get", "clusterqueues")) == ["NAME", "COHORT", "PENDING WORKLOADS"]
    assert _headers(kubectl.ok("get", "cq", "-o", "wide")) == [
        "NAME",
        "COHORT",
        "STRATEGY",
        "PENDING WORKLOADS",
        "ADMITTED WORKLOADS",
    ]
    assert _headers(kubectl.ok("get", "localqueues", "-n", "default")) == [
        "NAME",
        "CLUSTERQUEUE",
        "PENDING WORKLOADS",
        "ADMITTED WORKLOADS",
    ]
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "columns", "namespace": "default"},
        "spec": {
            "queueName": "multislice-queue",
            "podSets": [{"count": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}],
        },
    }
    kubectl.ok("apply", "-f", "-", stdin=json.dumps(workload))
    assert _headers(kubectl.ok("get", "workloads", "-n", "default")) == [
        "NAME",
        "QUEUE",
        "RESERVED IN",
        "ADMITTED",
        "FINISHED",
        "AGE",
    ]
    stored = json.loads(kubectl.ok("get", "kwl", "columns", "-n", "default", "-o", "json"))
    assert stored["spec"]["podSets"][0]["name"] == "main"
    assert stored["spec"]["active"] is True
