"""The admission controller stops when cancelled, even as a wake-up arrives at that moment."""

from __future__ import annotations

import asyncio

from kq.controllers.admission import AdmissionController
from kq.runtime.client import KubeClient


def _controller(client: KubeClient) -> tuple[AdmissionController, asyncio.Event]:
    """A controller, and an event set once it has run a cycle."""
    cycled = asyncio.Event()
    controller = AdmissionController(
        client,
        is_leader=lambda: True,
        event_namespace="default",
        on_cycle=lambda _result, _seconds, _cpu: cycled.set(),
    )
    return controller, cycled


async def test_cancel_racing_a_wake_up_still_stops_the_controller(client: KubeClient) -> None:
    for _ in range(20):
        controller, cycled = _controller(client)
        task = asyncio.create_task(controller.run())
        await asyncio.wait_for(
            asyncio.gather(*(i.wait_synced() for i in controller.informers.values())), 20
        )
        # A term starts with a cycle; the loop then goes (at its next turn) into its bounded wait.
        await asyncio.wait_for(cycled.wait(), 20)
        await asyncio.sleep(0)
        # Same loop iteration: the wait's event completes and the task is cancelled.
        controller._wake.set()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=5)
        assert done, "the controller ignored its cancellation"
