"""Budgets through ``kq run`` and HTTP, on both backends.

Accounting over a window, a workload kept waiting with the budget's words, the cycle handing
back what a finished workload did not use, a calendar window rolling over, a restart of kq in
the middle of a window (the ledger lives in the Budget's status), and validation.
Time is the wall clock with windows of seconds: 36 cores for 9 s is 0.09 core-hours.
"""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path
from typing import Any

import pytest

from kq.api.timestamps import parse_time
from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import WORKLOADS
from tests import harness
from tests.admissionchecks.test_approval_cluster import scraped
from tests.budgets.helpers import bounded, budget, budget_status, hours, pending_message
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    finish,
    flavor,
    get_workload,
    local_queue,
    namespace,
    suffix,
)
from tests.harness import Cluster
from tests.kqrun import free_port, kq_run, webhook_ca

pytestmark = pytest.mark.slow


def world(cluster: Cluster, cache: Path, **cq_spec: Any) -> tuple[str, str]:
    """A namespace with LocalQueue ``lq`` on a 200-core ClusterQueue; returns (ns, cq)."""
    s = suffix()
    ns, rf, cq = f"budget-{s}", f"rf-{s}", f"cq-{s}"
    apply(cluster, cache, namespace(ns), flavor(rf), cluster_queue(cq, rf, "cpu", 200, **cq_spec),
          local_queue(ns, "lq", cq))  # fmt: skip
    return ns, cq


async def pending_on_budget(client: KubeClient, ns: str, name: str) -> str:
    seen: list[Any] = []

    async def probe() -> str | None:
        obj = await get_workload(client, ns, name)
        seen[:] = [(obj.get("status") or {}).get("conditions")]
        message = pending_message(obj)
        return message if message.startswith("budget ") else None

    try:
        return await eventually(probe, f"{name} pending on a budget")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; its conditions: {seen}") from None


async def is_admitted(client: KubeClient, ns: str, name: str) -> dict[str, Any]:
    return await eventually(lambda: admitted(client, ns, name), f"{name} admitted")


def is_api_error(exc: Exception) -> bool:
    return isinstance(exc, ApiError)


def admitted_at(obj: dict[str, Any]) -> float:
    return parse_time((condition(obj, "Admitted") or {}).get("lastTransitionTime")) or 0.0


async def test_a_cohort_budget_counts_admissions_and_keeps_the_next_waiting(
    cluster: Cluster, client: KubeClient, tmp_path: Path, leftovers: list[str]
) -> None:
    cache = tmp_path / "cache"
    cohort = f"co-{suffix()}"
    ns, _ = world(cluster, cache, cohort=cohort)
    leftovers.append(ns)
    name = f"team-{suffix()}"
    apply(cluster, cache, budget(name, {"kind": "Cohort", "name": cohort}, {"cpu": "1"}))
    run, port = tmp_path / "run", free_port()
    with kq_run(cluster, run, ns, metrics_port=port):
        for wl in ("a", "b", "c"):  # 36 cores x 40 s = 0.4 core-hours each; the budget is 1
            apply(cluster, cache, bounded(ns, wl, "lq", 36, 40))
            if wl != "c":
                await is_admitted(client, ns, wl)
        message = await pending_on_budget(client, ns, "c")
        assert message == (
            f"budget {name} cpu: 0.8 of 1 cpu-hours used or reserved in the window; "
            "0.2 available, needs 0.4"
        )
        await asyncio.sleep(2)
        await finish(client, ns, "a")  # a hands back the 0.4 it reserved, less what it used
        await is_admitted(client, ns, "c")
        await finish(client, ns, "b")
        await finish(client, ns, "c")

        async def settled() -> dict[str, Any] | None:
            status = await budget_status(client, name)
            ledger = status.get("admissions") or []
            return status if len(ledger) == 3 and all("end" in e for e in ledger) else None

        status = await eventually(settled, "every admission closed in the ledger")
        labels = {"budget": name, "resource": "cpu"}
        assert scraped(port, "kq_budget_limit_resource_hours", **labels) == 1.0
        assert scraped(port, "kq_budget_reserved_resource_hours", **labels) == 0.0
        consumed = scraped(port, "kq_budget_consumed_resource_hours", **labels)
        assert consumed == pytest.approx(hours(status, "consumed"), abs=1e-5)
    spans = [
        (parse_time(e["end"]) or 0) - (parse_time(e["start"]) or 0) for e in status["admissions"]
    ]
    assert all(s >= 0 for s in spans)
    assert {e["workload"] for e in status["admissions"]} == {f"{ns}/{w}" for w in "abc"}
    assert hours(status, "consumed") == pytest.approx(36 * sum(spans) / 3600, abs=1e-6)
    assert hours(status, "consumed") > 0
    assert hours(status, "reserved") == 0
    assert hours(status, "remaining") == pytest.approx(1 - hours(status, "consumed"), abs=1e-5)
    exhausted = {c["type"]: c for c in status["conditions"]}["Exhausted"]
    assert (exhausted["status"], exhausted["reason"]) == ("False", "WithinLimit")


async def test_a_calendar_window_rolls_over_and_lets_the_waiting_workload_in(
    cluster: Cluster, client: KubeClient, tmp_path: Path, leftovers: list[str]
) -> None:
    cache = tmp_path / "cache"
    ns, _ = world(cluster, cache)
    leftovers.append(ns)
    name = f"lq-{suffix()}"
    target = {"kind": "LocalQueue", "namespace": ns, "name": "lq"}
    apply(cluster, cache, budget(name, target, {"cpu": "0.1"}, "20s", "Calendar"))
    with kq_run(cluster, tmp_path / "run", ns):
        # Start with a fresh window (they start at multiples of 20 s from the epoch), so that
        # what follows happens in one window and b can only get in at the next.
        await asyncio.sleep(20 - time.time() % 20 + 0.5)
        apply(cluster, cache, bounded(ns, "a", "lq", 36, 9))  # 0.09 of 0.1 core-hours
        await is_admitted(client, ns, "a")
        await asyncio.sleep(3)
        await finish(client, ns, "a")  # it consumed 3 s or more: 0.03 and up
        apply(cluster, cache, bounded(ns, "b", "lq", 36, 9))
        message = await pending_on_budget(client, ns, "b")
        assert message.startswith(f"budget {name} cpu: ")
        window_end = parse_time((await budget_status(client, name)).get("windowEnd"))
        assert window_end is not None
        b = await is_admitted(client, ns, "b")
        assert admitted_at(b) >= window_end - 1  # conditions carry whole seconds

        async def rolled() -> bool:
            # The status follows on the controller's next tick, which may come after the
            # retry that let b in: nothing orders the two.
            status = await budget_status(client, name)
            return (parse_time(status.get("windowStart")) or 0) >= window_end

        await harness.eventually(rolled, "the Budget's status in the next window", within=10)


async def test_a_restarted_kq_keeps_counting_what_the_window_consumed(
    cluster: Cluster, client: KubeClient, tmp_path: Path, leftovers: list[str]
) -> None:
    cache = tmp_path / "cache"
    ns, cq = world(cluster, cache)
    leftovers.append(ns)
    name = f"cq-{suffix()}"
    apply(cluster, cache, budget(name, {"kind": "ClusterQueue", "name": cq}, {"cpu": "0.1"}))
    with kq_run(cluster, tmp_path / "first", ns):
        apply(cluster, cache, bounded(ns, "a", "lq", 36, 9))  # reserves 0.09 of 0.1
        a = await is_admitted(client, ns, "a")
        apply(cluster, cache, bounded(ns, "b", "lq", 36, 2))  # 0.02 more would not fit
        await pending_on_budget(client, ns, "b")

        async def recorded() -> bool:
            return len((await budget_status(client, name)).get("admissions") or []) == 1

        await eventually(recorded, "a in the budget's ledger")
    # kq is down: a is deleted; its admission must still count when kq is back.
    await client.delete(WORKLOADS, "a", ns)
    await asyncio.sleep(max(0.0, admitted_at(a) + 10 - time.time()))
    port = free_port()
    with kq_run(cluster, tmp_path / "second", ns, metrics_port=port):

        async def closed() -> dict[str, Any] | None:
            status = await budget_status(client, name)
            ledger = status.get("admissions") or []
            return status if ledger and "end" in ledger[0] else None

        # The first kq was killed holding the leader Lease: the new one leads once it expires
        # (15 s), so this waits longer than the usual 20 s on a loaded machine.
        status = await harness.eventually(
            closed, "a's admission closed by the new kq", within=60, retry=is_api_error
        )
        # Counted up to its maximum execution time, when kq would have stopped it.
        assert hours(status, "consumed") == pytest.approx(0.09, abs=1e-6)
        # Two more passes of the controller (so one whole pass after the ledger was closed),
        # each trying b again: b stays out. Without changes a pass comes every 15 s.
        ticks = scraped(port, TICKS) or 0.0
        await harness.eventually(
            lambda: more_ticks(port, ticks + 2), "two more budget passes", within=60
        )
        message = await pending_on_budget(client, ns, "b")
        assert "0.09 of 0.1 cpu-hours" in message
        assert "needs 0.02" in message


TICKS = "kq_budget_controller_ticks_total"


async def more_ticks(port: int, at_least: float) -> bool:
    return (scraped(port, TICKS) or 0.0) >= at_least


def budget_webhook(name: str, port: int, ca: bytes) -> dict[str, Any]:
    """deploy/webhooks.yaml's rule for Budgets, by URL."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": "vbudgets.kq.dev",
            "clientConfig": {"url": f"https://127.0.0.1:{port}/validate/kueue",
                             "caBundle": base64.b64encode(ca).decode()},
            "rules": [{"apiGroups": ["kq.dev"], "apiVersions": ["v1alpha1"],
                       "operations": ["CREATE", "UPDATE"], "resources": ["budgets"]}],
            "failurePolicy": "Fail", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 10,
        }],
    }  # fmt: skip


def test_kq_refuses_a_zero_window_and_an_unknown_resource(cluster: Cluster, tmp_path: Path) -> None:
    cache, s = tmp_path / "cache", suffix()
    ns, hook = f"budget-{s}", f"kq-budgets-{s}"
    apply(cluster, cache, namespace(ns))
    port, run = free_port(), tmp_path / "run"
    target = {"kind": "ClusterQueue", "name": "anything"}
    with kq_run(cluster, run, ns, webhook_port=port):
        apply(cluster, cache, budget_webhook(hook, port, webhook_ca(run, port)))
        try:
            zero = cluster.refusal(
                cache_dir=cache, verb="apply", obj=budget(f"zero-{s}", target, {"cpu": "1"}, "0s")
            )
            assert "spec.window.duration: must be a positive duration" in zero
            tpu = cluster.refusal(
                cache_dir=cache, verb="apply", obj=budget(f"tpu-{s}", target, {"tpu": "10000"})
            )
            assert "spec.resourceHours[tpu]: unknown resource 'tpu'" in tpu
            apply(cluster, cache, budget(f"ok-{s}", target, {"cpu": "1"}))
        finally:
            cluster.kubectl("delete", "validatingwebhookconfiguration", hook, cache_dir=cache)
            cluster.kubectl("delete", "budget", f"ok-{s}", cache_dir=cache)
