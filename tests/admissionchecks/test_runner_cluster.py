"""A check controller whose kinds the cluster does not serve stays idle and says why."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from kq.admissionchecks import Activity, CheckContext, CheckUpdate, Obj, Resource
from kq.admissionchecks.runner import CheckRunner, served_controllers
from kq.runtime.client import KubeClient
from kq.runtime.events import EventRecorder
from kq.runtime.informer import Informer
from kq.runtime.resources import ADMISSION_CHECKS
from tests.controllers.helpers import apply, condition, eventually, suffix
from tests.harness import Cluster

WIDGETS = Resource("nothing.kq.example", "v1", "widgets", "Widget", namespaced=True)


class NeedsWidgets:
    CONTROLLER_NAME: ClassVar[str] = "kq.example/needs-widgets"
    WATCHES: ClassVar[tuple[Resource, ...]] = (WIDGETS,)

    def activity(self, check: Obj, ctx: CheckContext) -> Activity:
        return Activity.ok()

    async def sync(
        self, workload: Obj, checks: Sequence[Obj], ctx: CheckContext
    ) -> Sequence[CheckUpdate]:
        return []


async def test_unserved_kinds_leave_the_controller_idle_and_its_checks_inactive(
    cluster: Cluster, client: KubeClient, tmp_path: Path
) -> None:
    served, idle = await served_controllers(client, {NeedsWidgets.CONTROLLER_NAME: NeedsWidgets()})
    assert served == {}
    activity = idle[NeedsWidgets.CONTROLLER_NAME]
    assert (activity.active, activity.reason) == (False, "ResourcesNotServed")
    assert "widgets.nothing.kq.example/v1" in activity.message

    name = f"widgets-{suffix()}"
    check: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {"controllerName": NeedsWidgets.CONTROLLER_NAME},
    }
    apply(cluster, tmp_path / "cache", check)
    informers: dict[Resource, Informer] = {}

    def informer_for(resource: Resource) -> Informer:
        informers[resource] = Informer(client, resource)
        return informers[resource]

    runner = CheckRunner(client, served, informer_for, EventRecorder(client), idle=idle)
    tasks = [asyncio.create_task(i.run()) for i in informers.values()]
    tasks.append(asyncio.create_task(runner.run()))
    try:

        async def inactive() -> dict[str, Any] | None:
            found = condition(await client.get(ADMISSION_CHECKS, name), "Active")
            return found if found and found["status"] == "False" else None

        found = await eventually(inactive, "the check marked inactive")
        assert found["reason"] == "ResourcesNotServed"
        assert found["message"] == activity.message
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
