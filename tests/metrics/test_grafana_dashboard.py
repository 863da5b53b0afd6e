"""deploy/grafana/kq-dashboard.json queries only series kq exposes, by their labels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from kq.observability import metrics
from tests.harness import REPO
from tests.metrics.kueue_v019 import KUEUE

DASHBOARD = REPO / "deploy" / "grafana" / "kq-dashboard.json"
OTHER = {"leader_election_master_status": ("gauge", ("name",), None)}
"""controller-runtime's series kq exposes besides Kueue's (``pod`` comes from the scrape)."""
SCRAPE_LABELS = {"pod", "le"}
IDENT = re.compile(r"\b((?:kueue|multikueue|leader_election)_[a-z_]+)\b")
BY = re.compile(r"\bby \(([^)]*)\)")
MATCHER = re.compile(r"([a-z_]+)\s*=~?\s*\"")


def exposed() -> dict[str, tuple[str, tuple[str, ...], Any]]:
    produced = {n: r for n, r in KUEUE.items() if n not in metrics.NOT_PRODUCED}
    return {**produced, **OTHER}


def base(name: str, series: dict[str, Any]) -> str:
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and series.get(name.removesuffix(suffix), ("",))[0] == "histogram":
            return name.removesuffix(suffix)
    return name


def expressions(dashboard: dict[str, Any]) -> Iterator[str]:
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield variable["definition"]


def test_every_queried_metric_exists_with_its_labels() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    series = exposed()
    queried = set()
    for expr in expressions(dashboard):
        names = [base(n, series) for n in IDENT.findall(expr)]
        assert names, expr
        for name in names:
            assert name in series, f"{name} is not exposed by kq: {expr}"
        queried.update(names)
        labels = set().union(*(series[n][1] for n in names)) | SCRAPE_LABELS
        used = {label.strip() for group in BY.findall(expr) for label in group.split(",")}
        used |= set(MATCHER.findall(expr))
        assert used <= labels, (expr, used - labels)
    # The dashboard's subject: the admission path, quota and fair sharing.
    assert {
        "kueue_pending_workloads",
        "kueue_admission_wait_time_seconds",
        "kueue_evicted_workloads_total",
        "kueue_cluster_queue_nominal_quota",
        "kueue_cohort_subtree_quota",
        "kueue_local_queue_pending_workloads",
    } <= queried


def test_panels_have_unique_ids_and_a_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}"
