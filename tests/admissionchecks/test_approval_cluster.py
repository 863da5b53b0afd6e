"""The admission-check lifecycle through a third-party check, on both backends.

``examples/kq-check-approval`` is pip-installed into a private site directory and ``kq run``
(a real process, as in a cluster) loads it through the ``kq`` entry-point group: kq writes its
AdmissionCheck's ``Active`` condition, lists it ``Pending`` on reservation, admits on
``Ready``, evicts and backs off on ``Retry`` and deactivates on ``Rejected``, with Kueue's
reasons and messages.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kq.runtime.client import KubeClient
from kq.runtime.resources import ADMISSION_CHECKS, CLUSTER_QUEUES, WORKLOADS
from tests.controllers.helpers import (
    apply,
    cluster_queue,
    condition,
    eventually,
    flavor,
    get_workload,
    is_true,
    local_queue,
    namespace,
    suffix,
    workload,
    workload_until,
)
from tests.harness import REPO, Cluster, present
from tests.kqrun import free_port, install_plugin
from tests.kqrun import kq_run as run_kq

APPROVAL = REPO / "examples" / "kq-check-approval"
CONTROLLER = "approval.kq.example/manual"
DECISION = "approval.kq.example/decision"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def approval_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_plugin(APPROVAL, tmp_path_factory.mktemp("approval-site"))


@pytest.fixture(scope="module")
def metrics_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def kq_run(
    cluster: Cluster,
    approval_site: Path,
    metrics_port: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Path]:
    """One ``kq run`` with the approval plugin for this module's tests, on this backend."""
    workdir = tmp_path_factory.mktemp("kq-run")
    ns = f"kq-system-{suffix()}"
    apply(cluster, workdir / "cache", namespace(ns))
    with run_kq(cluster, workdir, ns, pythonpath=approval_site, metrics_port=metrics_port) as log:
        yield log


def scraped(port: int, name: str, **labels: str) -> float | None:
    """One sample from ``kq run``'s /metrics, as Prometheus would scrape it, whose labels
    include ``labels``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and labels.items() <= found.labels.items():
                return float(found.value)
    return None


def check(name: str, controller: str = CONTROLLER, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "AdmissionCheck",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"controllerName": controller},
    }


class World:
    """A namespace, a flavor, an approval check and a ClusterQueue that requires it."""

    def __init__(self, cluster: Cluster, tmp: Path, **cq_spec: Any) -> None:
        self.cluster, self.cache, self.id = cluster, tmp / "cache", suffix()
        self.ns, self.cq, self.check = f"ac-{self.id}", f"cq-{self.id}", f"approve-{self.id}"
        if "admissionChecksStrategy" not in cq_spec:
            cq_spec["admissionChecks"] = [self.check]
        apply(
            cluster,
            self.cache,
            namespace(self.ns),
            flavor(f"rf-{self.id}"),
            # Long enough for the test to take its "retry" back (a kubectl call) before the
            # back-off ends; with 1 s a slow kubectl let the check retry twice.
            check(self.check, **{"approval.kq.example/retry-seconds": "3"}),
            cluster_queue(self.cq, f"rf-{self.id}", "cpu", 4, **cq_spec),
            local_queue(self.ns, "lq", self.cq),
        )

    def submit(self, name: str, cpu: int = 1) -> None:
        apply(self.cluster, self.cache, workload(self.ns, name, "lq", {"cpu": cpu}))

    def decide(self, name: str, decision: str | None) -> None:
        value = f"{DECISION}-" if decision is None else f"{DECISION}={decision}"
        args = ["label", "--overwrite", "workload", "-n", self.ns, name, value]
        result = self.cluster.kubectl(*args, cache_dir=self.cache)
        assert result.returncode == 0, result.stderr


def state_of(obj: dict[str, Any], check_name: str) -> dict[str, Any] | None:
    for state in (obj.get("status") or {}).get("admissionChecks") or ():
        if state["name"] == check_name:
            return dict(state)
    return None


async def until(client: KubeClient, world: World, name: str, what: str, test: Any) -> Any:
    return await workload_until(client, world.ns, name, what, test)


async def test_check_active_then_pending_then_ready_admits(
    cluster: Cluster, kq_run: Path, metrics_port: int, client: KubeClient, tmp_path: Path
) -> None:
    world = World(cluster, tmp_path)

    async def active() -> dict[str, Any] | None:
        obj = await client.get(ADMISSION_CHECKS, world.check)
        found = condition(obj, "Active")
        return found if found and found["status"] == "True" else None

    assert (await eventually(active, "the check Active"))["reason"] == "Active"
    world.submit("wl")
    obj = await until(client, world, "wl", "quota reserved", lambda o: is_true(o, "QuotaReserved"))
    admitted = condition(obj, "Admitted")
    assert admitted is not None
    assert (admitted["status"], admitted["reason"], admitted["message"]) == (
        "False", "UnsatisfiedAdmissionChecks", "The workload has not all checks ready",
    )  # fmt: skip
    obj = await until(client, world, "wl", "check message", lambda o: (state_of(o, world.check)
                      or {"message": ""})["message"].startswith("Waiting"))  # fmt: skip
    assert present(state_of(obj, world.check))["state"] == "Pending"

    world.decide("wl", "approved")
    obj = await until(client, world, "wl", "admitted", lambda o: is_true(o, "Admitted"))
    assert present(state_of(obj, world.check))["state"] == "Ready"
    events = cluster.kubectl("get", "events", "-n", world.ns, "-o",
                             "jsonpath={range .items[*]}{.reason}={.message}{\"\\n\"}{end}",
                             cache_dir=world.cache).stdout  # fmt: skip
    admitted_event = f"Admitted=Admitted by ClusterQueue {world.cq}, wait time since reservation"
    assert admitted_event in events
    # The time from quota reservation to the last check's Ready, once per admission.
    waits = "kueue_admission_checks_wait_time_seconds"
    assert scraped(metrics_port, f"{waits}_count", cluster_queue=world.cq) == 1
    assert (scraped(metrics_port, f"{waits}_sum", cluster_queue=world.cq) or 0.0) > 0.0


async def test_retry_evicts_backs_off_and_counts_the_retry(
    cluster: Cluster, kq_run: Path, client: KubeClient, tmp_path: Path
) -> None:
    world = World(cluster, tmp_path)
    world.submit("wl")
    await until(client, world, "wl", "reserved", lambda o: is_true(o, "QuotaReserved"))
    world.decide("wl", "retry")

    def evicted(obj: dict[str, Any]) -> bool:
        found = condition(obj, "Evicted")
        return found is not None and found["status"] == "True"

    obj = await until(client, world, "wl", "evicted", evicted)
    found = condition(obj, "Evicted")
    assert found is not None
    assert found["reason"] == "AdmissionCheck"
    assert found["message"] == (
        f'Evicted due to AdmissionCheck in Retry state: "{world.check}" (Asked to try again later)'
    )
    world.decide("wl", None)
    # Released, Requeued=False while backing off, then BackoffFinished and reserved again.
    obj = await until(client, world, "wl", "requeued after back-off", lambda o: (
        condition(o, "Requeued") or {}).get("reason") == "BackoffFinished")  # fmt: skip
    assert obj["status"]["requeueState"].get("requeueAt") is None
    obj = await until(client, world, "wl", "reserved again", lambda o: is_true(o, "QuotaReserved"))
    state = state_of(obj, world.check)
    assert state is not None
    assert (state["state"], state["retryCount"]) == ("Pending", 1)


async def test_rejected_deactivates_and_frees_the_quota(
    cluster: Cluster, kq_run: Path, client: KubeClient, tmp_path: Path
) -> None:
    world = World(cluster, tmp_path)
    world.submit("wl", cpu=4)
    world.submit("next", cpu=4)
    await until(client, world, "wl", "reserved", lambda o: is_true(o, "QuotaReserved"))
    world.decide("wl", "rejected")
    obj = await until(client, world, "wl", "deactivated", lambda o: o["spec"].get("active") is False
                      and (condition(o, "Evicted") or {}).get("status") == "True")  # fmt: skip
    evicted = condition(obj, "Evicted")
    assert evicted is not None
    assert evicted["reason"] == "DeactivatedDueToAdmissionCheck"
    assert evicted["message"] == (
        "The workload is deactivated due to AdmissionCheck in Rejected state: "
        f'"{world.check}" (Rejected by a person)'
    )
    assert condition(obj, "DeactivationTarget") is None
    # Its quota goes to the next workload; the deactivated one stays out.
    await until(client, world, "next", "next reserved", lambda o: is_true(o, "QuotaReserved"))
    obj = await get_workload(client, world.ns, "wl")
    assert obj["status"].get("admission") is None
    events = cluster.kubectl("get", "events", "-n", world.ns, "-o",
                             "jsonpath={range .items[*]}{.reason}{\"\\n\"}{end}",
                             cache_dir=world.cache).stdout.split()  # fmt: skip
    assert "AdmissionCheckRejected" in events
    assert "EvictedDueToDeactivatedDueToAdmissionCheck" in events


async def test_cluster_queue_inactive_until_its_checks_are(
    cluster: Cluster, kq_run: Path, client: KubeClient, tmp_path: Path
) -> None:
    ident = suffix()
    cache = tmp_path / "cache"
    apply(cluster, cache, flavor(f"rf-{ident}"),
          cluster_queue(f"cq-{ident}", f"rf-{ident}", "cpu", 1,
                        admissionChecks=[f"missing-{ident}", f"foreign-{ident}"]),
          check(f"foreign-{ident}", controller="elsewhere.example/not-kq"))  # fmt: skip

    async def inactive() -> dict[str, Any] | None:
        obj = await client.get(CLUSTER_QUEUES, f"cq-{ident}")
        found = condition(obj, "Active")
        return found if found and found["status"] == "False" else None

    found = await eventually(inactive, "the ClusterQueue inactive")
    assert found["reason"] == "AdmissionCheckNotFound"
    assert found["message"] == (
        f"Can't admit new workloads: references missing AdmissionCheck(s): missing-{ident}, "
        f"references inactive AdmissionCheck(s): foreign-{ident}."
    )
    # A check whose controller kq does not run is left alone: nobody wrote its Active.
    foreign = await client.get(ADMISSION_CHECKS, f"foreign-{ident}")
    assert condition(foreign, "Active") is None


async def test_on_flavors_limits_a_check_to_its_flavor(
    cluster: Cluster, kq_run: Path, client: KubeClient, tmp_path: Path
) -> None:
    ident = suffix()
    world = World(
        cluster,
        tmp_path,
        admissionChecksStrategy={
            "admissionChecks": [{"name": f"approve-{ident}", "onFlavors": [f"other-{ident}"]}]
        },
    )
    apply(cluster, world.cache, flavor(f"other-{ident}"), check(f"approve-{ident}"))
    world.submit("wl")
    obj = await until(client, world, "wl", "admitted", lambda o: is_true(o, "Admitted"))
    assert not obj["status"].get("admissionChecks")
    wl = await client.get(WORKLOADS, "wl", world.ns)
    assert present(condition(wl, "Admitted"))["reason"] == "Admitted"
