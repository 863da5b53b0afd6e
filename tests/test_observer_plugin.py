"""The observer hooks fire in ``kq run`` for an out-of-tree plugin, on both backends."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controllers.helpers import (
    apply,
    cluster_queue,
    flavor,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.harness import REPO, Cluster, wait_until
from tests.kqrun import install_plugin, kq_run

AUDIT = REPO / "examples" / "kq-plugin-audit"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def audit_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_plugin(AUDIT, tmp_path_factory.mktemp("audit-site"))


@pytest.fixture
def audited(cluster: Cluster, audit_site: Path, tmp_path: Path) -> Iterator[Path]:
    """``kq run`` with the audit plugin; yields its audit file."""
    ns = f"kq-system-{suffix()}"
    apply(cluster, tmp_path / "cache", namespace(ns))
    audit = tmp_path / "audit.jsonl"
    os.environ["KQ_AUDIT_FILE"] = str(audit)  # inherited by the kq run process
    try:
        with kq_run(cluster, tmp_path / "run", ns, pythonpath=audit_site):
            yield audit
    finally:
        del os.environ["KQ_AUDIT_FILE"]


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_decisions_and_cycles_reach_the_plugin(
    cluster: Cluster, audited: Path, tmp_path: Path
) -> None:
    ident, cache = suffix(), tmp_path / "cache"
    ns, cq = f"audit-{ident}", f"cq-{ident}"
    apply(cluster, cache, namespace(ns), flavor(f"rf-{ident}"),
          cluster_queue(cq, f"rf-{ident}", "cpu", 1), local_queue(ns, "lq", cq),
          workload(ns, "fits", "lq", {"cpu": 1}))  # fmt: skip
    admit = {"event": "decision", "kind": "Admit", "workload": f"{ns}/fits", "clusterQueue": cq}
    wait_until(lambda: admit in lines(audited), "the Admit decision in the audit log", within=30)
    apply(cluster, cache, workload(ns, "waits", "lq", {"cpu": 1}))
    pending = wait_until(
        lambda: [r for r in lines(audited) if r.get("workload") == f"{ns}/waits"],
        "a decision on the waiting workload",
        within=30,
    )
    assert pending[0]["kind"] == "Pending"
    assert pending[0]["reason"] == "WaitingForQuota"
    cycles = [r for r in lines(audited) if r["event"] == "cycle"]
    assert any(c["admitted"] >= 1 for c in cycles)
