"""The workload controller through ``kq run``, on both backends: stopPolicy HoldAndDrain,
maximumExecutionTimeSeconds, and Workloads whose job is gone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import CLUSTER_QUEUES, WORKLOADS, Resource
from tests.controllers.helpers import (
    apply,
    cluster_queue,
    condition,
    flavor,
    is_true,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.controllers.helpers import (
    workload_until as until,
)
from tests.harness import Cluster, present
from tests.kqrun import kq_run

pytestmark = pytest.mark.slow
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)


@pytest.fixture(scope="module")
def running(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    workdir = tmp_path_factory.mktemp("kq-run")
    ns = f"kq-system-{suffix()}"
    apply(cluster, workdir / "cache", namespace(ns))
    with kq_run(cluster, workdir, ns) as log:
        yield log


def evicted_for(reason: str) -> Callable[[dict[str, Any]], bool]:
    return lambda o: (
        (condition(o, "Evicted") or {}).get("reason") == reason and is_true(o, "Evicted")
    )


async def test_hold_and_drain_evicts_and_restart_readmits(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ident, cache = suffix(), tmp_path / "cache"
    ns, cq = f"stop-{ident}", f"cq-{ident}"
    apply(cluster, cache, namespace(ns), flavor(f"rf-{ident}"),
          cluster_queue(cq, f"rf-{ident}", "cpu", 2), local_queue(ns, "lq", cq),
          workload(ns, "wl", "lq", {"cpu": 1}))  # fmt: skip
    await until(client, ns, "wl", "admitted", lambda o: is_true(o, "Admitted"))
    await client.merge_patch(CLUSTER_QUEUES, cq, {"spec": {"stopPolicy": "HoldAndDrain"}})
    obj = await until(client, ns, "wl", "drained", evicted_for("ClusterQueueStopped"))
    assert present(condition(obj, "Evicted"))["message"] == "The ClusterQueue is stopped"
    await until(client, ns, "wl", "released", lambda o: o["status"].get("admission") is None)
    await client.merge_patch(CLUSTER_QUEUES, cq, {"spec": {"stopPolicy": "None"}})
    obj = await until(client, ns, "wl", "admitted again", lambda o: is_true(o, "Admitted"))
    requeued = condition(obj, "Requeued")
    assert requeued is not None
    assert (requeued["reason"], requeued["message"]) == (
        "ClusterQueueRestarted", "The ClusterQueue was restarted after being stopped",
    )  # fmt: skip


async def test_maximum_execution_time_deactivates_and_frees_the_quota(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ident, cache = suffix(), tmp_path / "cache"
    ns, cq = f"maxexec-{ident}", f"cq-{ident}"
    apply(cluster, cache, namespace(ns), flavor(f"rf-{ident}"),
          cluster_queue(cq, f"rf-{ident}", "cpu", 1), local_queue(ns, "lq", cq),
          workload(ns, "wl", "lq", {"cpu": 1}, maximumExecutionTimeSeconds=2))  # fmt: skip
    obj = await until(client, ns, "wl", "deactivated",
                      evicted_for("DeactivatedDueToMaximumExecutionTimeExceeded"))  # fmt: skip
    assert obj["spec"]["active"] is False
    assert present(condition(obj, "Evicted"))["message"] == (
        "The workload is deactivated due to exceeding the maximum execution time"
    )
    await until(client, ns, "wl", "released", lambda o: o["status"].get("admission") is None)


async def test_a_workload_whose_job_was_orphaned_finishes_and_frees_its_quota(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ident, cache = suffix(), tmp_path / "cache"
    ns, cq = f"orphan-{ident}", f"cq-{ident}"
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns, "name": "job"}}
    apply(cluster, cache, namespace(ns), flavor(f"rf-{ident}"),
          cluster_queue(cq, f"rf-{ident}", "cpu", 1), local_queue(ns, "lq", cq), owner)  # fmt: skip
    stored = await client.get(CONFIGMAPS, "job", ns)
    wl = workload(ns, "wl", "lq", {"cpu": 1})
    wl["metadata"].update(
        labels={"kueue.x-k8s.io/job-uid": stored["metadata"]["uid"]},
        finalizers=["kueue.x-k8s.io/resource-in-use"],
        ownerReferences=[{"apiVersion": "v1", "kind": "ConfigMap", "name": "job",
                          "uid": stored["metadata"]["uid"], "controller": True}],
    )  # fmt: skip
    apply(cluster, cache, wl)
    await until(client, ns, "wl", "admitted", lambda o: is_true(o, "Admitted"))
    apply(cluster, cache, workload(ns, "next", "lq", {"cpu": 1}))
    # What the garbage collector does to dependents of a job deleted with orphan propagation.
    await client.merge_patch(WORKLOADS, "wl", {"metadata": {"ownerReferences": None}}, namespace=ns)
    obj = await until(client, ns, "wl", "finished", lambda o: is_true(o, "Finished"))
    finished = condition(obj, "Finished")
    assert finished is not None
    assert (finished["reason"], finished["message"]) == (
        "OwnerNotFound", "The workload's owner no longer exists",
    )  # fmt: skip
    await until(client, ns, "wl", "finalizer gone", lambda o: not o["metadata"].get("finalizers"))
    await until(client, ns, "next", "next admitted", lambda o: is_true(o, "Admitted"))
