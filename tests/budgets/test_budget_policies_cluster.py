"""``whenExhausted`` LowerPriority and Borrow through ``kq run`` and HTTP, on both backends.

LowerPriority: kq writes Kueue's priority boost on the over-budget Workload (and an Event
saying why), admits it, and a newcomer its spec priority would not have let preempt it does.
Borrow: the over-budget workload goes in on what its ClusterQueue borrows from the cohort, not
on its own nominal quota, and never by preemption.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kq.api.priority import LOWERED_BY_BUDGET_ANNOTATION, PRIORITY_BOOST_ANNOTATION
from kq.runtime.client import KubeClient
from kq.runtime.resources import EVENTS
from tests.budgets.helpers import bounded, budget, pending_message
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    condition,
    eventually,
    flavor,
    get_workload,
    local_queue,
    namespace,
    suffix,
    workload_until,
)
from tests.harness import Cluster
from tests.kqrun import kq_run

pytestmark = pytest.mark.slow


async def is_admitted(client: KubeClient, ns: str, name: str) -> dict[str, Any]:
    return await eventually(lambda: admitted(client, ns, name), f"{name} admitted")


def preempted(obj: dict[str, Any]) -> bool:
    evicted = condition(obj, "Evicted") or {}
    return evicted.get("status") == "True" and evicted.get("reason") == "Preempted"


async def test_lower_priority_admits_lowered_and_a_newcomer_preempts_it(
    cluster: Cluster, client: KubeClient, tmp_path: Path, leftovers: list[str]
) -> None:
    cache, s = tmp_path / "cache", suffix()
    ns, rf, cq, name = f"budget-{s}", f"rf-{s}", f"cq-{s}", f"lower-{s}"
    leftovers.append(ns)
    preemption = {"withinClusterQueue": "LowerPriority"}
    apply(cluster, cache, namespace(ns), flavor(rf),
          cluster_queue(cq, rf, "cpu", 72, preemption=preemption),
          local_queue(ns, "team", cq), local_queue(ns, "other", cq))  # fmt: skip
    lower = budget(name, {"kind": "LocalQueue", "name": "team", "namespace": ns}, {"cpu": "0.5"})
    lower["spec"].update({"whenExhausted": "LowerPriority", "priorityBoost": -100})
    apply(cluster, cache, lower)
    with kq_run(cluster, tmp_path / "run", ns):
        # 36 cores x 40 s = 0.4 core-hours each: b would take the budget past 0.5.
        apply(cluster, cache, bounded(ns, "a", "team", 36, 40))
        await is_admitted(client, ns, "a")
        apply(cluster, cache, bounded(ns, "b", "team", 36, 40))
        b = await is_admitted(client, ns, "b")
        assert b["metadata"]["annotations"][PRIORITY_BOOST_ANNOTATION] == "-100"
        assert b["metadata"]["annotations"][LOWERED_BY_BUDGET_ANNOTATION] == name

        async def lowered_event() -> str | None:
            found = await client.list(EVENTS, namespace=ns)
            for event in found.get("items") or ():
                involved = event.get("involvedObject") or {}
                if involved.get("name") == "b" and event.get("reason") == "LoweredByBudget":
                    return str(event.get("message"))
            return None

        message = await eventually(lowered_event, "b's LoweredByBudget event")
        assert message == (
            f"budget {name} is exhausted (whenExhausted: LowerPriority): admitted at priority "
            "-100 instead of 0 (priorityBoost -100)"
        )
        # The ClusterQueue is full: a newcomer of priority 0 preempts b (-100), not a (0).
        apply(cluster, cache, bounded(ns, "newcomer", "other", 36, 40))
        await workload_until(client, ns, "b", "b preempted", preempted)
        await is_admitted(client, ns, "newcomer")
        assert not preempted(await get_workload(client, ns, "a"))
        assert pending_message(await get_workload(client, ns, "b")) != ""


async def test_borrow_admits_only_on_what_the_cohort_lends(
    cluster: Cluster, client: KubeClient, tmp_path: Path, leftovers: list[str]
) -> None:
    cache, s = tmp_path / "cache", suffix()
    ns, rf, team, lender = f"budget-{s}", f"rf-{s}", f"team-{s}", f"lender-{s}"
    name, cohort = f"borrow-{s}", f"co-{s}"
    leftovers.append(ns)
    apply(cluster, cache, namespace(ns), flavor(rf),
          cluster_queue(team, rf, "cpu", 72, cohort=cohort),
          cluster_queue(lender, rf, "cpu", 20, cohort=cohort),
          local_queue(ns, "team", team))  # fmt: skip
    borrow = budget(name, {"kind": "ClusterQueue", "name": team}, {"cpu": "0.5"})
    borrow["spec"]["whenExhausted"] = "Borrow"
    apply(cluster, cache, borrow)
    with kq_run(cluster, tmp_path / "run", ns):
        apply(cluster, cache, bounded(ns, "a", "team", 36, 40))
        await is_admitted(client, ns, "a")
        # b is over budget: team's own 36 unused count as full for it, and the cohort lends 20.
        apply(cluster, cache, bounded(ns, "b", "team", 36, 40))

        async def waiting() -> str | None:
            message = pending_message(await get_workload(client, ns, "b"))
            return message if "whenExhausted: Borrow" in message else None

        message = await eventually(waiting, "b pending on borrowed capacity")
        assert message == (
            f"couldn't assign flavors to pod set main: budget {name} cpu: 0.4 of 0.5 cpu-hours "
            "used or reserved in the window; 0.1 available, needs 0.4; whenExhausted: Borrow: "
            "admitted only on capacity borrowed from the cohort: insufficient quota to borrow "
            f"for cpu in flavor {rf} beyond the ClusterQueue's own, 16 more needed"
        )
        # The lender lends 40: b goes in, on borrowed capacity.
        apply(cluster, cache, cluster_queue(lender, rf, "cpu", 40, cohort=cohort))
        await is_admitted(client, ns, "b")
