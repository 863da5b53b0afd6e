"""Built-in integrations register through entry points; registration checks the Protocol."""

from __future__ import annotations

import pluggy
import pytest

from kq import hookspecs
from kq.hookspecs import Register, hookimpl
from kq.jobframework import GenericJob
from kq.jobframework.registry import NotAnIntegration, by_gvk, job_integrations
from kq.plugins import DuplicateNameError
from kq_plugins.jobs.batch_job import BatchJob


def test_builtins_are_found_through_entry_points(integrations: dict[str, GenericJob]) -> None:
    assert sorted(integrations) == [
        "batch/job",
        "deployment",
        "jobset.x-k8s.io/jobset",
        "kubeflow.org/mpijob",
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "pod",
        "ray.io/rayjob",
        "statefulset",
    ]
    assert all(isinstance(i, GenericJob) for i in integrations.values())
    assert set(by_gvk(integrations)) == {
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("batch/v1", "Job"),
        ("jobset.x-k8s.io/v1alpha2", "JobSet"),
        ("kubeflow.org/v2beta1", "MPIJob"),
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
        ("ray.io/v1", "RayJob"),
        ("v1", "Pod"),
    }


def manager_with(*plugins: object) -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for index, plugin in enumerate(plugins):
        pm.register(plugin, name=f"plugin{index}")
    return pm


class Incomplete:
    NAME = "example.com/widget"

    def is_suspended(self, job: object) -> bool:
        return False


class RegistersIncomplete:
    @hookimpl
    def kq_register_job_integrations(self, register: Register) -> None:
        register(Incomplete)


class RegistersBatchJob:
    @hookimpl
    def kq_register_job_integrations(self, register: Register) -> None:
        register(BatchJob)


def test_a_class_missing_protocol_members_is_refused() -> None:
    with pytest.raises(NotAnIntegration, match="does not implement"):
        job_integrations(manager_with(RegistersIncomplete()))


def test_two_plugins_registering_one_framework_name_are_named() -> None:
    with pytest.raises(DuplicateNameError, match="'batch/job' is registered by both"):
        job_integrations(manager_with(RegistersBatchJob(), RegistersBatchJob()))
