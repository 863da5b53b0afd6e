"""``manageJobsWithoutQueueName: true``: a job naming no LocalQueue is still kq's.

The webhook suspends it and kq makes it a Workload without ``queueName`` (the API refuses an
empty one, which kq used to send, failing for ever). As Kueue, the Workload then says why it
waits: ``QuotaReserved=False``, ``Inadmissible``, "LocalQueue  doesn't exist" (the empty
name). Once the user names a queue the Workload follows it, is admitted and the job runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kq.runtime.resources import EVENTS, JOBS
from tests.controllers.helpers import condition, is_true
from tests.harness import Cluster
from tests.integrations_io.conftest import QUEUE, QUEUE_LABEL, Stack, eventually, kq_stack

SELECTOR = "batch.kubernetes.io/job-name=plain"


@pytest.fixture
async def stack(cluster: Cluster, tmp_path: Path) -> AsyncIterator[Stack]:
    async with kq_stack(cluster, tmp_path, manage_jobs_without_queue_name=True) as running:
        yield running


def plain_job() -> dict[str, Any]:
    """A Job as anyone writes one: no kq label, not suspended."""
    container = {"name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 600"],
                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}  # fmt: skip
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "plain"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
    }


async def inadmissible(stack: Stack) -> dict[str, Any]:
    workload = await stack.workload("Job", "plain")
    assert "queueName" not in workload["spec"]
    reserved = condition(workload, "QuotaReserved")
    assert reserved is not None, "no QuotaReserved condition yet"
    assert (reserved["status"], reserved["reason"], reserved["message"]) == (
        "False",
        "Inadmissible",
        "LocalQueue  doesn't exist",
    )
    return workload


async def test_a_job_without_a_queue_name_waits_under_a_workload_without_one(
    stack: Stack,
) -> None:
    await stack.local_queue()
    await stack.cluster_queue_with_flavor(cpu="4", memory="8Gi")
    created = await stack.create(JOBS, plain_job())
    assert created["spec"]["suspend"] is True, "the webhook did not suspend it"

    workload = await eventually(lambda: inadmissible(stack), "the Workload, inadmissible")
    job = await stack.client.get(JOBS, "plain", stack.ns)
    assert job["spec"]["suspend"] is True
    assert await stack.pods(SELECTOR) == []
    events = (await stack.client.list(EVENTS, namespace=stack.ns))["items"]
    created_events = [
        e
        for e in events
        if e["involvedObject"].get("name") == "plain" and e["reason"] == "CreatedWorkload"
    ]
    assert len(created_events) == 1, "created once, not retried"

    # The user names a queue: the suspended job's Workload moves to it and is admitted.
    labelled = {"metadata": {"labels": {QUEUE_LABEL: QUEUE}}}
    await stack.client.merge_patch(JOBS, "plain", labelled, namespace=stack.ns)

    async def admitted() -> None:
        moved = await stack.workload("Job", "plain")
        assert moved["metadata"]["uid"] == workload["metadata"]["uid"]
        assert moved["spec"].get("queueName") == QUEUE
        assert is_true(moved, "Admitted")
        pods = await stack.pods(SELECTOR)
        assert len(pods) == 1
        await stack.assert_running_on_the_flavor(pods)

    await eventually(admitted, "the Workload in the queue, admitted, and its pod running")
