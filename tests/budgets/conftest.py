"""The budget tests' clean-up: they leave no Workload behind for later suites to trip on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import Cluster


@pytest.fixture
def leftovers(cluster: Cluster, tmp_path: Path) -> Iterator[list[str]]:
    """Namespaces whose Workloads are deleted after the test (the real test plane has no
    namespace controller, so deleting a namespace would leave its objects)."""
    namespaces: list[str] = []
    yield namespaces
    for ns in namespaces:
        cluster.kubectl("delete", "workloads", "--all", "-n", ns, "--wait=false",
                        cache_dir=tmp_path / "cleanup-cache")  # fmt: skip
