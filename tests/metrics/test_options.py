"""The two options Kueue reports its optional series under, as kq reads and honours them."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from kq.config import ConfigError
from kq.config_file import parse_config
from tests.controllers.helpers import apply, namespace, suffix
from tests.harness import Cluster, wait_until
from tests.kqrun import free_port, kq_run
from tests.metrics.test_kueue_metrics import exposed_types


@pytest.mark.parametrize(
    ("metrics", "local_queues", "resources"),
    [
        ({}, True, False),
        ({"localQueueMetrics": {}}, True, False),
        ({"localQueueMetrics": {"enable": False}}, False, False),
        ({"enableClusterQueueResources": True}, True, True),
    ],
)
def test_defaults_are_kueues(
    metrics: dict[str, object], local_queues: bool, resources: bool
) -> None:
    config = parse_config({"metrics": metrics})
    assert (config.local_queue_metrics, config.cluster_queue_resource_metrics) == (
        local_queues,
        resources,
    )


@pytest.mark.parametrize(
    ("metrics", "error"),
    [
        ({"localQueueMetrics": {"localQueueSelector": {"matchLabels": {"a": "b"}}}},
         "metrics.localQueueMetrics.localQueueSelector: not supported by kq"),
        ({"localQueueMetrics": {"enable": "yes"}}, "metrics.localQueueMetrics.enable: must be"),
        ({"localQueueMetrics": {"enabled": True}}, "metrics.localQueueMetrics"),
        ({"enableClusterQueueResources": 1}, "metrics.enableClusterQueueResources: must be"),
        ({"customLabels": [{"name": "team"}]}, "metrics"),
    ],
)  # fmt: skip
def test_bad_metric_options_are_refused(metrics: dict[str, object], error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        parse_config({"metrics": metrics})


def test_optional_series_stay_off_when_not_asked(cluster: Cluster, tmp_path: Path) -> None:
    """``localQueueMetrics.enable: false`` and the default ``enableClusterQueueResources``:
    neither family is exposed at all, while the ClusterQueue series are."""
    ns = f"mo-{suffix()}"
    apply(cluster, tmp_path / "cache", namespace(ns))
    port = free_port()
    options = "  localQueueMetrics:\n    enable: false\n"
    with kq_run(cluster, tmp_path, ns, metrics_port=port, metrics_options=options):

        def scraped() -> dict[str, str] | None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    return exposed_types(r.read().decode())
            except OSError:
                return None

        types = wait_until(scraped, "kq's /metrics", within=20, interval=0.2)
    assert "kueue_pending_workloads" in types
    assert not [name for name in types if name.startswith("kueue_local_queue_")]
    assert "kueue_cluster_queue_nominal_quota" not in types
