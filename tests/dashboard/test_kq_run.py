"""``kq run --dashboard-address``: the page, read over HTTP, on both backends: a cohort where
one queue borrows what the other lends, then reclaims it by preemption."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kq.runtime.client import KubeClient
from kq.sandbox.visibility import register_visibility
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    eventually,
    flavor,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.harness import REPO, Cluster
from tests.kqrun import free_port, kq_run
from tests.visibility.fixtures import visibility_config

pytestmark = pytest.mark.slow


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as answer:
        return answer.status, await answer.text()


async def _state(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session, session.get(f"{url}api/state") as answer:
        assert answer.status == 200
        state: dict[str, Any] = await answer.json()
        return state


def _queues(state: dict[str, Any], cohort: str) -> dict[str, dict[str, Any]]:
    root = next((c for c in state["cohorts"] if c["name"] == cohort), None)
    return {} if root is None else {q["name"]: q for q in root["queues"]}


async def test_kq_run_serves_the_dashboard_when_asked(cluster: Cluster, tmp_path: Path) -> None:
    ns = f"dash-{suffix()}"
    rf, co, lender, borrower = f"rf-{ns}", f"co-{ns}", f"lender-{ns}", f"borrower-{ns}"
    cache, port, visibility = tmp_path / "cache", free_port(), free_port()
    url = f"http://127.0.0.1:{port}/"
    apply(cluster, cache, namespace(ns))
    reclaim = {"reclaimWithinCohort": "Any"}
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        await register_visibility(client, ns, visibility)
        args = ("--dashboard-address", f"127.0.0.1:{port}")
        with kq_run(cluster, tmp_path, ns, visibility_config(visibility), args=args):
            apply(cluster, cache, flavor(rf),
                  cluster_queue(lender, rf, "cpu", 4, cohort=co, preemption=reclaim),
                  cluster_queue(borrower, rf, "cpu", 2, cohort=co),
                  local_queue(ns, "mine", lender), local_queue(ns, "theirs", borrower),
                  workload(ns, "big", "theirs", {"cpu": 4}))  # fmt: skip
            await eventually(lambda: admitted(client, ns, "big"), "big admitted, borrowing")

            async def lent() -> dict[str, dict[str, Any]] | None:
                queues = _queues(await _state(url), co)
                ok = queues.get(lender, {}).get("usage", [{}])[0].get("lent") == 2000
                return queues if ok else None

            await eventually(lent, "the dashboard to show the lender's 2 cpu lent")
            status, html = await _get(url)
            assert status == 200
            assert f"cohort {co}" in html
            assert "used 4 of nominal 2, borrowed 2, lent 0" in html
            assert "used 0 of nominal 4, borrowed 0, lent 2" in html

            apply(cluster, cache, workload(ns, "mine-now", "mine", {"cpu": 4}))
            await eventually(lambda: admitted(client, ns, "mine-now"), "the lender reclaims")

            async def big_queued() -> dict[str, Any] | None:
                state = await _state(url)
                queued = state["pending"].get(borrower) or []
                used = _queues(state, co).get(lender, {}).get("usage", [{}])[0].get("used")
                return state if [p["name"] for p in queued] == ["big"] and used == 4000 else None

            await eventually(big_queued, "big pending again, first in its queue, quota back")
            status, html = await _get(f"{url}?workload={ns}%2Fbig")
    assert status == 200
    assert f"Why: {ns}/big" in html
    assert f"Position 1 of 1 in ClusterQueue {borrower}" in html
    assert '<polygon class="preempted"' in html  # big's preemption on the timeline
    assert "used 4 of nominal 4, borrowed 0, lent 0" in html


def test_a_bad_dashboard_address_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kq", "run", "--dashboard-address", "8080"],
        capture_output=True, text=True, timeout=60, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--dashboard-address: '8080' is not HOST:PORT" in done.stderr


def test_kq_dev_refuses_a_bad_dashboard_port() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kq", "dev", "--dashboard-port", "70000"],
        capture_output=True, text=True, timeout=60, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--dashboard-port must be from 0 to 65535" in done.stderr


def test_kq_dev_stops_when_the_dashboard_port_is_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "kq", "dev", "--data-dir", str(tmp_path / "dev"),
             "--no-controller", "--dashboard-port", str(port)],
            capture_output=True, text=True, timeout=120, check=False, cwd=REPO,
        )  # fmt: skip
    assert done.returncode == 1
    assert "kq dev: dashboard: " in done.stderr
    assert "address already in use" in done.stderr
    assert "kq dev ready" not in done.stdout
