"""Events through client-go's correlator, against an API server: series, aggregates, spam, drops."""

from __future__ import annotations

import asyncio
from typing import Any

from kq.controllers.writer import MAX_QUEUED_EVENTS, WorkloadWriter
from kq.observability.metrics import REGISTRY
from kq.runtime.client import ClientSettings, KubeClient
from kq.runtime.event_correlator import AGGREGATE_AFTER, AGGREGATED_PREFIX, SPAM_BURST
from kq.runtime.events import NORMAL, WARNING, EventRecorder
from kq.runtime.resources import EVENTS
from tests.harness import Cluster, eventually
from tests.runtime.scratch import namespace


def workload(ns: str, name: str = "w") -> dict[str, Any]:
    meta = {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": "1"}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta}


async def events(client: KubeClient, ns: str) -> list[dict[str, Any]]:
    listed = await client.list(EVENTS, namespace=ns)
    return sorted(listed["items"], key=lambda e: e["metadata"]["name"])


def dropped(reason: str) -> float:
    return REGISTRY.get_sample_value("kq_events_dropped_total", {"reason": reason}) or 0.0


async def test_a_burst_of_identical_events_is_one_event_with_its_count(cluster: Cluster) -> None:
    async with namespace(cluster, "ev") as (client, ns):
        recorder = EventRecorder(client, "kq-test")
        obj = workload(ns)
        burst = 40  # beyond the spam filter's burst: repeats cost no token while one is in flight
        await asyncio.gather(
            *(recorder.record(obj, WARNING, "Pending", "no quota") for _ in range(burst))
        )
        for _ in range(3):  # one at a time: each a PATCH of the same Event
            await recorder.record(obj, WARNING, "Pending", "no quota")
        [event] = await events(client, ns)
        assert event["count"] == burst + 3
        assert (event["type"], event["reason"], event["message"]) == (
            WARNING,
            "Pending",
            "no quota",
        )
        assert event["involvedObject"]["name"] == "w"
        assert event["firstTimestamp"] <= event["lastTimestamp"]


async def test_distinct_events_are_kept_apart(cluster: Cluster) -> None:
    async with namespace(cluster, "ev") as (client, ns):
        recorder = EventRecorder(client, "kq-test")
        first, second = workload(ns, "a"), workload(ns, "b")
        await recorder.record(first, NORMAL, "QuotaReserved", "Quota reserved in cq")
        await recorder.record(first, NORMAL, "Admitted", "Admitted by cq")
        await recorder.record(second, NORMAL, "QuotaReserved", "Quota reserved in cq")
        await recorder.record(first, WARNING, "QuotaReserved", "Quota reserved in cq")
        seen = {
            (e["involvedObject"]["name"], e["type"], e["reason"], e["count"])
            for e in await events(client, ns)
        }
        assert seen == {
            ("a", NORMAL, "QuotaReserved", 1),
            ("a", NORMAL, "Admitted", 1),
            ("b", NORMAL, "QuotaReserved", 1),
            ("a", WARNING, "QuotaReserved", 1),
        }


async def test_many_messages_of_one_reason_are_combined(cluster: Cluster) -> None:
    async with namespace(cluster, "ev") as (client, ns):
        recorder = EventRecorder(client, "kq-test")
        obj = workload(ns)
        extra = 3
        for i in range(AGGREGATE_AFTER + extra - 1):
            await recorder.record(obj, WARNING, "Pending", f"message {i}")
        listed = await events(client, ns)
        separate = [e for e in listed if not e["message"].startswith(AGGREGATED_PREFIX)]
        [combined] = [e for e in listed if e["message"].startswith(AGGREGATED_PREFIX)]
        assert [e["message"] for e in separate] == [
            f"message {i}" for i in range(AGGREGATE_AFTER - 1)
        ]
        assert combined["count"] == extra
        last = AGGREGATE_AFTER + extra - 2
        assert combined["message"] == f"{AGGREGATED_PREFIX}message {last}"


async def test_a_flood_about_one_object_is_rate_limited_and_counted(cluster: Cluster) -> None:
    async with namespace(cluster, "ev") as (client, ns):
        recorder = EventRecorder(client, "kq-test")
        before = dropped("spam")
        flood = SPAM_BURST + 5
        for i in range(flood):  # distinct reasons: no series or aggregate absorbs them
            await recorder.record(workload(ns), NORMAL, f"Reason{i}", "m")
        assert len(await events(client, ns)) == SPAM_BURST
        assert dropped("spam") - before == flood - SPAM_BURST
        # Another object has its own bucket.
        await recorder.record(workload(ns, "other"), NORMAL, "Reason0", "m")
        assert len(await events(client, ns)) == SPAM_BURST + 1


async def test_events_beyond_a_full_queue_are_counted(cluster: Cluster) -> None:
    async with namespace(cluster, "ev") as (reader, ns):
        # A writer limited to 1 request/s: the queue of Events in flight fills behind it.
        limited = await KubeClient.connect(cluster.kubeconfig, ClientSettings(qps=1, burst=1))
        async with limited:
            recorder = EventRecorder(limited, "kq-test")
            writer = WorkloadWriter(limited, recorder, is_leader=lambda: True)
            before = dropped("queue_full")
            extra = 7
            for i in range(MAX_QUEUED_EVENTS + extra):
                writer.event(workload(ns, f"w{i}"), "Pending", "waiting", warning=True)
            assert writer.dropped_events == extra
            assert dropped("queue_full") - before == extra

            async def one_written() -> bool:
                return len(await events(reader, ns)) >= 1

            await eventually(one_written, "the first Event to pass the limiter")
            await writer.close()
