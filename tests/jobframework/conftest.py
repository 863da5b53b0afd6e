"""Example manifests as the API would return them, and the built-in integrations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kq.jobframework import GenericJob
from kq.jobframework.registry import job_integrations
from kq.plugins import build_plugin_manager

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def manifests(relative: str, kind: str | None = None) -> Iterator[dict[str, Any]]:
    for doc in yaml.safe_load_all((EXAMPLES / relative).read_text()):
        if doc and (kind is None or doc["kind"] == kind):
            yield doc


def stored(doc: dict[str, Any], uid: str = "uid-1") -> dict[str, Any]:
    """``doc`` as read back from the API: namespaced and with a UID."""
    metadata = doc.setdefault("metadata", {})
    metadata.setdefault("namespace", "default")
    metadata["uid"] = uid
    return doc


def example(relative: str, name: str, uid: str = "uid-1") -> dict[str, Any]:
    return stored(next(d for d in manifests(relative) if d["metadata"]["name"] == name), uid)


@pytest.fixture(scope="session")
def integrations() -> dict[str, GenericJob]:
    return job_integrations(build_plugin_manager())


@pytest.fixture
def job_kind(integrations: dict[str, GenericJob]) -> GenericJob:
    return integrations["batch/job"]


@pytest.fixture
def jobset_kind(integrations: dict[str, GenericJob]) -> GenericJob:
    return integrations["jobset.x-k8s.io/jobset"]


@pytest.fixture
def mpijob_kind(integrations: dict[str, GenericJob]) -> GenericJob:
    return integrations["kubeflow.org/mpijob"]


@pytest.fixture
def rayjob_kind(integrations: dict[str, GenericJob]) -> GenericJob:
    return integrations["ray.io/rayjob"]


def rayjob(**spec: Any) -> dict[str, Any]:
    """A RayJob with a head, two worker groups and KubeRay's CRD defaults."""
    base = {
        "shutdownAfterJobFinishes": True,
        "submissionMode": "K8sJobMode",
        "rayClusterSpec": {
            "headGroupSpec": {
                "template": {
                    "spec": {"containers": [{"name": "head", "image": "rayproject/ray:2.9"}]}
                }
            },
            "workerGroupSpecs": [
                {
                    "groupName": "Small",
                    "replicas": 2,
                    "numOfHosts": 1,
                    "template": {"spec": {"containers": [{"name": "w", "image": "ray"}]}},
                },
                {
                    "groupName": "tpu",
                    "replicas": 2,
                    "numOfHosts": 4,
                    "template": {"spec": {"containers": [{"name": "t", "image": "ray"}]}},
                },
            ],
        },
    }
    base.update(spec)
    return stored(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "ray", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": base,
        }
    )
