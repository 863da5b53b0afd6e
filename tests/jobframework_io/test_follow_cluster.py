"""Jobs are reconciled again when what decides about them changes elsewhere in the cluster.

Through the API server: a namespace gaining the labels of ``managedJobsNamespaceSelector``
brings its jobs under kq, and a changed ``kueue.x-k8s.io/priority-class`` label (or a changed
WorkloadPriorityClass value) reaches the job's Workload.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kq.config import KqConfig
from kq.jobframework import GenericJob
from kq.jobframework.naming import workload_name
from kq.runtime.resources import JOBS, NAMESPACES, WORKLOAD_PRIORITY_CLASSES, WORKLOADS
from tests.harness import Cluster
from tests.jobframework_io.test_controller_cluster import batch_job, eventually, scenario

OPT_IN = {"kq.example.com/managed": "true"}


async def test_a_namespace_labelled_into_the_selector_brings_its_jobs_under_kq(
    cluster: Cluster, kubectl_cache: Path, integrations: dict[str, GenericJob]
) -> None:
    config = KqConfig(managed_jobs_namespace_selector={"matchLabels": OPT_IN})
    gvk = integrations["batch/job"].GVK
    async with scenario(cluster, kubectl_cache, config=config) as s:
        outside = await s.client.create(JOBS, batch_job(s.ns))
        # A job created after it in an opted-in namespace: once its Workload exists, the
        # earlier job's reconcile (taken first from the queue, and writing nothing) is done.
        sentinel_ns = f"{s.ns}-in"
        await s.client.create(NAMESPACES, {"metadata": {"name": sentinel_ns, "labels": OPT_IN}})
        sentinel = await s.client.create(JOBS, batch_job(sentinel_ns))
        sentinel_wl = workload_name("sample", sentinel["metadata"]["uid"], gvk)
        await eventually(lambda: s.client.get(WORKLOADS, sentinel_wl, sentinel_ns))
        listing = await s.client.list(WORKLOADS, namespace=s.ns)
        assert listing["items"] == [], "a job in a namespace outside the selector got a Workload"

        await s.client.merge_patch(NAMESPACES, s.ns, {"metadata": {"labels": OPT_IN}})
        wl_name = workload_name("sample", outside["metadata"]["uid"], gvk)
        workload = await eventually(lambda: s.workload(wl_name))
        assert workload["spec"]["queueName"] == "lq"
        await s.client.delete(NAMESPACES, sentinel_ns)


async def test_the_workload_follows_the_priority_class_label_and_value(
    cluster: Cluster, kubectl_cache: Path, integrations: dict[str, GenericJob]
) -> None:
    async with scenario(cluster, kubectl_cache) as s:
        low, high = f"{s.ns}-low", f"{s.ns}-high"
        for wpc, value in ((low, 10), (high, 1000)):
            await s.client.create(
                WORKLOAD_PRIORITY_CLASSES,
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta1",
                    "kind": "WorkloadPriorityClass",
                    "metadata": {"name": wpc},
                    "value": value,
                },
            )
        job = batch_job(s.ns)
        job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = low
        created = await s.client.create(JOBS, job)
        wl_name = workload_name("sample", created["metadata"]["uid"], integrations["batch/job"].GVK)

        async def priority(expected: tuple[str, int]) -> dict[str, Any]:
            workload = await s.workload(wl_name)
            spec = workload["spec"]
            assert spec["priorityClassSource"] == "kueue.x-k8s.io/workloadpriorityclass"
            assert (spec["priorityClassName"], spec["priority"]) == expected
            return workload

        await eventually(lambda: priority((low, 10)))

        relabel = {"metadata": {"labels": {"kueue.x-k8s.io/priority-class": high}}}
        await s.client.merge_patch(JOBS, "sample", relabel, namespace=s.ns)
        await eventually(lambda: priority((high, 1000)))

        async def announced() -> None:
            message = f"Updated workload priority class: {s.ns}/{wl_name}"
            assert ("UpdatedWorkload", message) in await s.events("Job", "sample")

        await eventually(announced)

        await s.client.merge_patch(WORKLOAD_PRIORITY_CLASSES, high, {"value": 2000})
        await eventually(lambda: priority((high, 2000)))
        for wpc in (low, high):
            await s.client.delete(WORKLOAD_PRIORITY_CLASSES, wpc)
