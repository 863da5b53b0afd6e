"""An AdmissionController running in the test's loop against the ``cluster`` backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kq.controllers.admission import AdmissionController
from kq.runtime.client import KubeClient


class LeaderGate(asyncio.Event):
    """The controller's leadership gate, set while leading; counts how often it was looked at,
    so a test can wait for a follower's idle polls instead of sleeping through them."""

    def __init__(self) -> None:
        super().__init__()
        self.looks = 0

    def is_set(self) -> bool:
        self.looks += 1
        return super().is_set()


@pytest.fixture
async def leader() -> LeaderGate:
    gate = LeaderGate()
    gate.set()
    return gate


@pytest.fixture
async def controller(client: KubeClient, leader: LeaderGate) -> AsyncIterator[AdmissionController]:
    running = AdmissionController(client, is_leader=leader, event_namespace="default")
    task = asyncio.create_task(running.run())
    yield running
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
