"""The admission controller stops when cancelled, even as a wake-up arrives at that moment."""

from __future__ import annotations

import asyncio

from kq.controllers.admission import AdmissionController
from kq.runtime.client import KubeClient


async def test_cancel_racing_a_wake_up_still_stops_the_controller(client: KubeClient) -> None:
    for _ in range(20):
        controller = AdmissionController(client, is_leader=lambda: True, event_namespace="default")
        task = asyncio.create_task(controller.run())
        await asyncio.wait_for(
            asyncio.gather(*(i.wait_synced() for i in controller.informers.values())), 20
        )
        await asyncio.sleep(0.05)  # into the loop's bounded wait
        # Same loop iteration: the wait's event completes and the task is cancelled.
        controller._wake.set()
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=5)
        assert done, "the controller ignored its cancellation"
