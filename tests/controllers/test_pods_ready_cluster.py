"""waitForPodsReady through ``kq run``, on both backends: timeout, back-off, deactivation after
the requeue limit, and blockAdmission, with Kueue's reasons and messages.

Bare Workloads have no job to report ``PodsReady``; Kueue times out a Workload without the
condition as one still waiting for its pods to start, and so does kq.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.resources import WORKLOADS
from tests.controllers.helpers import (
    apply,
    cluster_queue,
    condition,
    flavor,
    get_workload,
    is_true,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.controllers.helpers import (
    workload_until as until,
)
from tests.harness import Cluster, embedded_apiserver, present
from tests.kqrun import kq_run

pytestmark = pytest.mark.slow

CONFIG = """waitForPodsReady:
  enable: true
  timeout: 2s
  blockAdmission: true
  requeuingStrategy:
    backoffLimitCount: 1
    backoffBaseSeconds: 1
"""


@pytest.fixture(scope="module")
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """A cluster of this module's own: blockAdmission and the timeout act cluster-wide, and
    the shared cluster holds other tests' admitted Workloads, none of whose pods get ready."""
    workdir = tmp_path_factory.mktemp(f"pods-ready-{request.param}")
    if request.param == "embedded":
        with embedded_apiserver(workdir) as handle:
            yield handle
    else:
        from tests.realk8s.plane import real_control_plane

        with real_control_plane(workdir) as plane:
            yield Cluster("real", plane.kubeconfig, plane.server)


@pytest.fixture(scope="module")
def running(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    workdir = tmp_path_factory.mktemp("kq-run")
    ns = f"kq-system-{suffix()}"
    apply(cluster, workdir / "cache", namespace(ns))
    with kq_run(cluster, workdir, ns, CONFIG) as log:
        yield log


def world(cluster: Cluster, tmp: Path, cpu: int = 1) -> tuple[str, Path]:
    ident, cache = suffix(), tmp / "cache"
    ns = f"pr-{ident}"
    cq = cluster_queue(f"cq-{ident}", f"rf-{ident}", "cpu", cpu)
    apply(
        cluster,
        cache,
        namespace(ns),
        flavor(f"rf-{ident}"),
        cq,
        local_queue(ns, "lq", cq["metadata"]["name"]),
    )
    return ns, cache


def reason(obj: dict[str, Any], type_: str) -> str | None:
    found = condition(obj, type_)
    return None if found is None else f"{found['status']}/{found['reason']}"


async def set_pods_ready(client: KubeClient, ns: str, name: str) -> None:
    obj = await get_workload(client, ns, name)
    conditions = [c for c in obj["status"]["conditions"] if c["type"] != "PodsReady"]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions.append({"type": "PodsReady", "status": "True", "reason": "Started",
                       "message": "All pods reached readiness and the workload is running",
                       "lastTransitionTime": now})  # fmt: skip
    await client.merge_patch(WORKLOADS, name, {"status": {"conditions": conditions}},
                             namespace=ns, subresource="status")  # fmt: skip


async def test_timeout_evicts_backs_off_then_deactivates_past_the_limit(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ns, cache = world(cluster, tmp_path)
    apply(cluster, cache, workload(ns, "wl", "lq", {"cpu": 1}))
    obj = await until(client, ns, "wl", "evicted for PodsReady",
                      lambda o: reason(o, "Evicted") == "True/PodsReadyTimeout")  # fmt: skip
    evicted = condition(obj, "Evicted")
    assert evicted is not None
    assert evicted["message"] == f"Exceeded the PodsReady timeout {ns}/wl"
    assert obj["status"]["requeueState"]["count"] == 1
    # Released, backed off for 1 s (Requeued=False PodsReadyTimeout), requeued, admitted again.
    obj = await until(client, ns, "wl", "back-off over",
                      lambda o: reason(o, "Requeued") == "True/BackoffFinished")  # fmt: skip
    # The second timeout is past backoffLimitCount 1: deactivated, not requeued.
    deactivated = "True/DeactivatedDueToRequeuingLimitExceeded"
    obj = await until(client, ns, "wl", "deactivated", lambda o: o["spec"].get("active") is False
                      and reason(o, "Evicted") == deactivated)  # fmt: skip
    evicted = condition(obj, "Evicted")
    assert evicted is not None
    assert evicted["message"] == (
        "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    )
    obj = await until(client, ns, "wl", "quota released",
                      lambda o: o["status"].get("admission") is None)  # fmt: skip
    assert obj["status"].get("requeueState") is None


async def test_ready_pods_keep_a_workload_admitted_past_the_timeout(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ns, cache = world(cluster, tmp_path, cpu=4)
    apply(cluster, cache, workload(ns, "ready", "lq", {"cpu": 1}))
    await until(client, ns, "ready", "admitted", lambda o: is_true(o, "Admitted"))
    await set_pods_ready(client, ns, "ready")
    apply(cluster, cache, workload(ns, "slow", "lq", {"cpu": 1}))
    # "slow" was admitted after "ready": once it times out, "ready" is past its timeout too.
    await until(client, ns, "slow", "slow evicted",
                lambda o: reason(o, "Evicted") == "True/PodsReadyTimeout")  # fmt: skip
    obj = await get_workload(client, ns, "ready")
    assert is_true(obj, "Admitted")
    assert not is_true(obj, "Evicted")


async def test_block_admission_holds_new_workloads_until_pods_are_ready_or_evicted(
    cluster: Cluster, running: Path, client: KubeClient, tmp_path: Path
) -> None:
    ns, cache = world(cluster, tmp_path, cpu=4)
    apply(cluster, cache, workload(ns, "first", "lq", {"cpu": 1}))
    await until(client, ns, "first", "admitted", lambda o: is_true(o, "Admitted"))
    apply(cluster, cache, workload(ns, "second", "lq", {"cpu": 1}))
    first = await until(client, ns, "first", "first evicted",
                        lambda o: reason(o, "Evicted") == "True/PodsReadyTimeout")  # fmt: skip
    await until(client, ns, "second", "second reserved", lambda o: is_true(o, "QuotaReserved"))
    # The quota was free all along: only blockAdmission kept "second" out until then.
    evicted_at = present(condition(first, "Evicted"))["lastTransitionTime"]
    assert min(event_times(cluster, cache, ns, "second", "QuotaReserved")) >= evicted_at


def event_times(cluster: Cluster, cache: Path, ns: str, name: str, reason: str) -> list[str]:
    selector = f"involvedObject.name={name},reason={reason}"
    result = cluster.kubectl("get", "events", "-n", ns, "--field-selector", selector, "-o",
                             "jsonpath={.items[*].lastTimestamp}", cache_dir=cache)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.split()
