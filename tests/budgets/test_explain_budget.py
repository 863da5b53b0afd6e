"""``kq explain`` on a workload a budget keeps waiting: the budget's words, then where its
figures are and what would let the workload in (both backends, through kq run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.budgets.helpers import bounded, budget, pending_message
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    eventually,
    flavor,
    get_workload,
    local_queue,
    suffix,
)
from tests.harness import Cluster
from tests.visibility.fixtures import serving
from tests.visibility.test_explain import kq_explain

pytestmark = pytest.mark.slow


async def test_explain_names_the_budget_and_what_lets_the_workload_in(
    cluster: Cluster, tmp_path: Path, leftovers: list[str]
) -> None:
    ns = f"explain-budget-{suffix()}"
    leftovers.append(ns)
    rf, cq, name = f"rf-{ns}", f"cq-{ns}", f"b-{ns}"
    async with serving(cluster, tmp_path, ns) as client:
        cache = tmp_path / "cache"
        apply(cluster, cache, flavor(rf), cluster_queue(cq, rf, "cpu", 100),
              local_queue(ns, "lq", cq),
              budget(name, {"kind": "ClusterQueue", "name": cq}, {"cpu": "0.1"}),
              bounded(ns, "first", "lq", 36, 9))  # fmt: skip
        await eventually(lambda: admitted(client, ns, "first"), "first admitted")
        apply(cluster, cache, bounded(ns, "second", "lq", 36, 9))

        async def vetoed() -> str | None:
            message = pending_message(await get_workload(client, ns, "second"))
            return message if message.startswith(f"budget {name} ") else None

        words = await eventually(vetoed, "second pending on the budget")
        out = kq_explain(cluster, ns, "second")
    assert f"  pending: Vetoed: {words}" in out.splitlines()
    assert f"  Budget {name} keeps it waiting: `kubectl get budget {name} -o yaml` shows" in out
