"""What the chaos suite found, each as a small deterministic test through ``kq run``, kept
now that kq is fixed.

1. A Workload that arrived while a BestEffortFIFO head of the same shape was parked (it did
   not fit) waited with no ``QuotaReserved`` condition at all: no cycle pops it until a
   requeue. It is now told the parked head's words (``kq.scheduler.held.parked_words``).
2. A leader stopped (SIGSTOP: a frozen VM, a long pause) and resumed after its successor took
   the lease wrote admissions decided on its stale view: quota over-committed. Leader-only
   writes, retries included, now go out only while the lease was renewed less than the renew
   deadline ago (``LeaderElector.leading``, ``KubeClient.fenced``).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import LEASES, WORKLOADS
from tests.chaos.faults import LEASE_NAME
from tests.chaos.processes import Election, Replica
from tests.controllers.helpers import (
    apply,
    cluster_queue,
    condition,
    flavor,
    is_true,
    local_queue,
    namespace,
    priority_class,
    suffix,
    workload,
)
from tests.harness import Cluster, eventually, not_found
from tests.kqrun import kq_run

pytestmark = pytest.mark.slow


def _says_why(obj: dict[str, Any]) -> dict[str, Any] | None:
    waiting = condition(obj, "QuotaReserved") or {}
    return obj if waiting.get("status") == "False" and waiting.get("message") else None


async def test_a_workload_behind_a_parked_shape_says_why_it_waits(
    cluster: Cluster, tmp_path: Path
) -> None:
    s = suffix()
    ns, kq_ns, rf, cq = f"park-{s}", f"kq-park-{s}", f"rf-{s}", f"cq-{s}"
    cache = tmp_path / "cache"
    apply(
        cluster,
        cache,
        namespace(ns),
        namespace(kq_ns),
        flavor(rf),
        cluster_queue(cq, rf, "cpu", 4),
        local_queue(ns, "lq", cq),
    )
    async with await KubeClient.connect(cluster.kubeconfig) as client:

        async def explained(name: str) -> dict[str, Any] | None:
            return _says_why(await client.get(WORKLOADS, name, ns))

        with kq_run(cluster, tmp_path / "kq", kq_ns):
            apply(cluster, cache, workload(ns, "first", "lq", {"cpu": 6}))
            await eventually(
                lambda: explained("first"), "first pending with a reason", retry=not_found
            )
            apply(cluster, cache, workload(ns, "second", "lq", {"cpu": 6}))
            await eventually(
                lambda: explained("second"), "second pending with a reason", retry=not_found
            )


async def _holder(client: KubeClient, ns: str) -> str:
    try:
        lease = await client.get(LEASES, LEASE_NAME, ns)
    except ApiError:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def _reserved(obj: dict[str, Any]) -> bool:
    return bool((obj.get("status") or {}).get("admission")) and not is_true(obj, "Finished")


async def test_a_paused_leader_does_not_admit_on_resume(cluster: Cluster, tmp_path: Path) -> None:
    """A leads and is stopped (SIGSTOP) while its admissions of four low-priority Workloads are
    refused (injected 503s) and being retried. Four high-priority ones arrive, B takes over
    and admits them; its words for the lows (why they wait) are refused, so their
    resourceVersions stay as A saw them. On SIGCONT, A's retries would go out before its
    renew loop stops it: 8 cpu reserved of 4. The storm meets the same thing as a resumed
    leader deciding from its stale view."""
    if cluster.backend != "embedded":
        pytest.skip("one case of the storm; the embedded backend is enough")
    s = suffix()
    ns, kq_ns, rf, cq = f"stale-{s}", f"kq-stale-{s}", f"rf-{s}", f"cq-{s}"
    cache = tmp_path / "cache"
    low = [workload(ns, f"low-{i}", "lq", {"cpu": 1}) for i in range(4)]
    high = [
        workload(ns, f"high-{i}", "lq", {"cpu": 1}, priority=100, priorityClassName=f"hi-{s}",
                 priorityClassSource="kueue.x-k8s.io/workloadpriorityclass")
        for i in range(4)
    ]  # fmt: skip
    setup = [namespace(ns), namespace(kq_ns), flavor(rf), priority_class(f"hi-{s}", 100)]
    apply(cluster, cache, *setup, cluster_queue(cq, rf, "cpu", 4), local_queue(ns, "lq", cq), *low)
    election = Election()
    a, b = (Replica(n, tmp_path / n, cluster.kubeconfig, kq_ns, election) for n in "ab")
    async with await KubeClient.connect(cluster.kubeconfig) as client:

        async def reserved() -> list[str]:
            items = (await client.list(WORKLOADS, namespace=ns))["items"]
            return sorted(o["metadata"]["name"] for o in items if _reserved(o))

        # A's admissions of the lows fail (503), so it is stopped while retrying them.
        status = {
            "errorRate": 1.0,
            "errorCode": 503,
            "match": f"/namespaces/{ns}/workloads/.*/status",
        }
        await client.request("PUT", "/kq/faults", body=status)
        try:
            a.start()
            await eventually(lambda: _retrying(a.log_path, ns), "A admitting, refused", within=30)
            a.signal(signal.SIGSTOP)
            # A write of B's to a low (its words) would turn A's retries into 409s and hide
            # what is tested here: those are refused at once (400, not retried) while B runs.
            lows = {**status, "errorCode": 400, "match": f"/namespaces/{ns}/workloads/low-"}
            await client.request("PUT", "/kq/faults", body=lows)
            first = await _holder(client, kq_ns)
            apply(cluster, cache, *high)
            b.start()
            await eventually(lambda: _new_holder(client, kq_ns, first), "B leads", within=30)
            want = [f"high-{i}" for i in range(4)]
            await eventually(lambda: _equal(reserved(), want), "B admits the highs")
            # The head of the lows and its parked equals are each told once why they wait.
            names = [f"low-{i}" for i in range(4)]
            await eventually(lambda: _refused(b.log_path, names), "B's words for the lows refused")
            await client.request("PUT", "/kq/faults", body={})
            a.signal(signal.SIGCONT)
            process = a.process
            assert process is not None
            await eventually(lambda: _exited(process), "A steps down", within=10)
            assert await reserved() == want
        finally:
            await client.request("PUT", "/kq/faults", body={})
            a.kill()
            b.kill()


async def _retrying(log: Path, ns: str) -> bool:
    text = await asyncio.to_thread(log.read_text, errors="replace")
    return any(
        '"retrying"' in line and f"/namespaces/{ns}/workloads/" in line
        for line in text.splitlines()
    )


async def _refused(log: Path, names: list[str]) -> bool:
    text = await asyncio.to_thread(log.read_text, errors="replace")
    lines = [line for line in text.splitlines() if '"workload status not written"' in line]
    return all(any(f'"workload": "{name}"' in line for line in lines) for name in names)


async def _equal(got: Awaitable[list[str]], want: list[str]) -> bool:
    return await got == want


async def explained_in(client: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    return _says_why(await client.get(WORKLOADS, name, ns))


async def _new_holder(client: KubeClient, ns: str, old: str) -> bool:
    holder = await _holder(client, ns)
    return bool(holder) and holder != old


async def _exited(process: subprocess.Popen[bytes]) -> bool:
    return process.poll() is not None
