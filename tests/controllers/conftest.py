"""An AdmissionController running in the test's loop against the ``cluster`` backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kq.controllers.admission import AdmissionController
from kq.runtime.client import KubeClient
from tests.harness import Cluster


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[KubeClient]:
    async with await KubeClient.connect(cluster.kubeconfig) as kube:
        yield kube


@pytest.fixture
async def leader() -> asyncio.Event:
    gate = asyncio.Event()
    gate.set()
    return gate


@pytest.fixture
async def controller(
    client: KubeClient, leader: asyncio.Event
) -> AsyncIterator[AdmissionController]:
    running = AdmissionController(client, is_leader=leader, event_namespace="default")
    task = asyncio.create_task(running.run())
    yield running
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
