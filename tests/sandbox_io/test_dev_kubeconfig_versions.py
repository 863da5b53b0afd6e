"""``kq dev --kubeconfig`` with kueue.x-k8s.io stored in v1beta2: Workloads written in either
version are admitted, kubectl's default (v1beta2) reads show v1beta2's fields, and v1beta1
objects keep every field, through kq dev's conversion webhook on the real API server (the
embedded one converts in process). Once kq dev stops the CRDs convert as before it started.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from kq.crds.conversion import V1BETA1, V1BETA2
from kq.webhooks.conversion import CONVERTED_CRDS
from tests.e2e.kqdev import kq_dev
from tests.e2e.traces import no_trace
from tests.harness import Cluster, wait_until

pytestmark = pytest.mark.slow


def _queues(tag: str) -> list[dict[str, Any]]:
    quota = {"name": "cpu", "nominalQuota": "8"}
    return [
        {"apiVersion": V1BETA1, "kind": "ResourceFlavor", "metadata": {"name": tag}},
        {"apiVersion": V1BETA1, "kind": "WorkloadPriorityClass", "metadata": {"name": tag},
         "value": 100},
        {"apiVersion": V1BETA1, "kind": "ClusterQueue", "metadata": {"name": tag},
         "spec": {"cohort": tag, "namespaceSelector": {}, "resourceGroups": [
             {"coveredResources": ["cpu"],
              "flavors": [{"name": tag, "resources": [quota]}]}]}},
        {"apiVersion": V1BETA1, "kind": "LocalQueue",
         "metadata": {"name": tag, "namespace": tag}, "spec": {"clusterQueue": tag}},
    ]  # fmt: skip


def _workload(tag: str, version: str, name: str) -> dict[str, Any]:
    pod_set = {"name": "main", "count": 1, "template": {"spec": {"restartPolicy": "Never",
               "containers": [{"name": "c", "image": "busybox",
                               "resources": {"requests": {"cpu": "1"}}}]}}}  # fmt: skip
    spec: dict[str, Any] = {"queueName": tag, "podSets": [pod_set]}
    if version == V1BETA1:
        spec |= {"priorityClassName": tag,
                 "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass"}  # fmt: skip
    else:
        spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                    "name": tag}  # fmt: skip
    return {"apiVersion": version, "kind": "Workload",
            "metadata": {"name": name, "namespace": tag}, "spec": spec}  # fmt: skip


def _admitted(workload: dict[str, Any]) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or ()
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)


def test_workloads_of_both_versions_admitted_and_read_in_v1beta2(
    cluster: Cluster, tmp_path: Path
) -> None:
    cache = tmp_path / "kubectl-cache"
    tag = f"versions-{uuid.uuid4().hex[:6]}"

    def kubectl(*args: str, input: str | None = None) -> str:
        done = cluster.kubectl(*args, input=input, cache_dir=cache)
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def conversions() -> list[Any]:
        none = {"strategy": "None"}  # the embedded server leaves out the default
        return [json.loads(kubectl("get", "crd", crd, "-o", "json"))["spec"].get("conversion")
                or none for crd in CONVERTED_CRDS]  # fmt: skip

    def applied() -> bool:
        # Retried: the API server picks up the CRDs' new conversion webhook asynchronously.
        objects = [*_queues(tag), _workload(tag, V1BETA1, "old"), _workload(tag, V1BETA2, "new")]
        text = yaml.safe_dump_all(objects)
        return cluster.kubectl("apply", "-f", "-", input=text, cache_dir=cache).returncode == 0

    def listed() -> dict[str, dict[str, Any]]:
        items = yaml.safe_load(kubectl("get", "workloads", "-n", tag, "-o", "yaml"))["items"]
        return {w["metadata"]["name"]: w for w in items}

    def in_v1beta1(kind: str, *name: str) -> dict[str, Any]:
        got: dict[str, Any] = json.loads(kubectl("get", f"{kind}.v1beta1.kueue.x-k8s.io",
                                                 *name, "-o", "json"))  # fmt: skip
        return got

    before = conversions()
    with no_trace(cluster, tmp_path / "cleanup-cache"):
        with kq_dev(tmp_path, "s1", 20, server=cluster.kubeconfig):
            kubectl("create", "namespace", tag)
            wait_until(applied, "the objects applied")
            wait_until(lambda: [_admitted(w) for w in listed().values()] == [True, True],
                       "both Workloads admitted", within=60)  # fmt: skip
            ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": tag}
            for workload in listed().values():
                assert workload["apiVersion"] == V1BETA2
                assert workload["spec"]["priorityClassRef"] == ref
                assert "priorityClassName" not in workload["spec"]
            old = in_v1beta1("workloads", "old", "-n", tag)
            assert old["spec"]["priorityClassName"] == tag
            assert old["spec"]["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass"
            assert in_v1beta1("clusterqueues", tag)["spec"]["cohort"] == tag
        kubectl("delete", "namespace", tag, "--wait=false")
        kubectl("delete", "clusterqueue,resourceflavor,workloadpriorityclass", tag)
    assert conversions() == before
