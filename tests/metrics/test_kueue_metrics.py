"""kq's /metrics against Kueue v0.19's list: every name Kueue declares is exposed with its
type, labels and buckets, or is one kq documents as not produced; kq adds no kueue_ name."""

from __future__ import annotations

import math
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from kq.observability import lq_metrics, metrics
from kq.observability.metric_options import enable
from kq.runtime.client import KubeClient
from tests.controllers.helpers import (
    admitted,
    apply,
    cluster_queue,
    eventually,
    finish,
    flavor,
    local_queue,
    namespace,
    suffix,
    workload,
)
from tests.harness import Cluster
from tests.kqrun import free_port, kq_run
from tests.metrics.kueue_v019 import KUEUE

PRODUCED = {name: row for name, row in KUEUE.items() if name not in metrics.NOT_PRODUCED}
KINDS = {Counter: "counter", Gauge: "gauge", Histogram: "histogram"}


def exposed_types(text: str) -> dict[str, str]:
    """``# TYPE`` lines of Kueue's families (the exposition names counters with _total)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            if name.startswith(("kueue_", "multikueue_")):
                out[name] = kind
    return out


def owner(sample: str, types: Mapping[str, str]) -> str | None:
    for suffix_ in ("", "_bucket", "_sum", "_count"):
        name = sample.removesuffix(suffix_) if suffix_ else sample
        if name in types and (not suffix_ or types[name] == "histogram"):
            return name
    return None


def kueue_samples(text: str) -> Iterator[tuple[str, Sample]]:
    types = exposed_types(text)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = owner(sample.name, types)
            if name is not None:
                yield name, sample


def test_not_produced_are_kueue_names() -> None:
    assert set(metrics.NOT_PRODUCED) <= set(KUEUE)


def test_registry_has_kueue_names_types_labels_and_buckets() -> None:
    enable(local_queues=True, cluster_queue_resources=True)
    types = exposed_types(generate_latest(metrics.REGISTRY).decode())
    assert types == {name: row[0] for name, row in PRODUCED.items()}
    declared = [
        m
        for module in (metrics, lq_metrics)
        for m in vars(module).values()
        if isinstance(m, Counter | Gauge | Histogram) and m._name.startswith("kueue_")
    ]
    for metric in declared:
        kind = KINDS[type(metric)]
        name = metric._name + ("_total" if kind == "counter" else "")
        assert name in PRODUCED, name
        expected_kind, labels, buckets = PRODUCED[name]
        assert kind == expected_kind, name
        assert tuple(metric._labelnames) == labels, name
        if isinstance(metric, Histogram):
            assert tuple(metric._upper_bounds) == (*(buckets or ()), math.inf), name
    assert {m._name + ("_total" if isinstance(m, Counter) else "") for m in declared} == set(
        PRODUCED
    )


def suspended_job(ns: str) -> dict[str, Any]:
    """A Job for the LocalQueue: the job framework creates its Workload (timed)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox",
                                    "resources": {"requests": {"cpu": "1"}}}],
                }
            },
        },
    }  # fmt: skip


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return str(response.read().decode())


async def test_kq_run_exposes_kueue_series(
    cluster: Cluster, kubectl_cache: Path, client: KubeClient, tmp_path: Path
) -> None:
    """A scrape of ``kq run`` after an admission, a pending workload and a finish: every
    kueue series has Kueue's labels and buckets, and the main families have samples."""
    s = suffix()
    ns, rf, cq, cohort = f"mx-{s}", f"rf-{s}", f"cq-{s}", f"co-{s}"
    apply(cluster, kubectl_cache, namespace(ns))
    port = free_port()
    options = "  enableClusterQueueResources: true\n"
    with kq_run(cluster, tmp_path, ns, metrics_port=port, metrics_options=options):
        apply(
            cluster,
            kubectl_cache,
            flavor(rf),
            cluster_queue(cq, rf, "cpu", 4, cohort=cohort),
            local_queue(ns, "lq", cq),
            workload(ns, "a", "lq", {"cpu": 3}),
        )
        await eventually(lambda: admitted(client, ns, "a"), "a admitted")
        # Jobs in kq's own namespace are not managed (Kueue's default namespace selector).
        jobs = f"{ns}-jobs"
        apply(cluster, kubectl_cache, namespace(jobs), local_queue(jobs, "lq", cq))
        apply(cluster, kubectl_cache, workload(ns, "b", "lq", {"cpu": 2}), suspended_job(jobs))
        await finish(client, ns, "a")
        await eventually(lambda: admitted(client, ns, "b"), "b admitted after a finished")

        async def finished_counted() -> str | None:
            text = scrape(port)
            names = {
                n
                for n, sample in kueue_samples(text)
                if {cq, ns, "Job"} & set(sample.labels.values())
            }
            wanted = {
                "kueue_finished_workloads",
                "kueue_local_queue_resource_usage",
                "kueue_workload_creation_latency_seconds",
            }
            return text if wanted <= names else None

        text = await eventually(finished_counted, "finished and LocalQueue usage gauges")
    seen: set[str] = set()
    for name, sample in kueue_samples(text):
        _, labels, buckets = KUEUE[name]
        assert name not in metrics.NOT_PRODUCED, name
        # The parser sorts labels; their order is checked on the registry above.
        assert set(sample.labels) - {"le"} == set(labels), (name, sample.labels)
        if sample.name.endswith("_bucket"):
            bound = float(sample.labels["le"])
            assert bound == math.inf or bound in (buckets or ()), (name, bound)
        if (
            cq in sample.labels.values()
            or cohort in sample.labels.values()
            or ns in sample.labels.values()
        ):
            seen.add(name)
    assert {
        "kueue_pending_workloads",
        "kueue_quota_reserved_workloads_total",
        "kueue_admitted_workloads_total",
        "kueue_admission_wait_time_seconds",
        "kueue_finished_workloads_total",
        "kueue_finished_workloads",
        "kueue_cluster_queue_status",
        "kueue_cluster_queue_info",
        "kueue_cluster_queue_nominal_quota",
        "kueue_cluster_queue_borrowing_limit",
        "kueue_cohort_info",
        "kueue_cohort_subtree_quota",
        "kueue_cohort_subtree_admitted_workloads_total",
        "kueue_local_queue_admitted_workloads_total",
        "kueue_local_queue_finished_workloads_total",
        "kueue_local_queue_status",
        "kueue_local_queue_resource_usage",
    } <= seen
