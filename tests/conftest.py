"""Backend selection: every API-level test runs on the embedded server, the real one, or both.

`pytest --backend=embedded` (default), `--backend=real` or `--backend=both`. Tests that need an
API server take the `cluster` fixture; it is session-scoped per backend, so tests isolate
themselves with their own namespaces and names.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from kq.observability.metric_options import set_role
from kq.observability.metrics import STANDALONE
from kq.runtime.client import KubeClient
from kq_plugins.budgets import BOOK
from tests.harness import Cluster, embedded_apiserver

BACKENDS = ("embedded", "real")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=(*BACKENDS, "both"),
        default=os.environ.get("KQ_TEST_BACKEND", "embedded"),
        help="API server(s) that API-level tests run against (default: embedded)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cluster" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("--backend")
        backends = list(BACKENDS) if chosen == "both" else [chosen]
        metafunc.parametrize("cluster", backends, indirect=True, scope="session")


@pytest.fixture(scope="session")
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    backend: str = request.param
    workdir = tmp_path_factory.mktemp(f"cluster-{backend}")
    if backend == "embedded":
        # The suites' own fault hooks (tests/apiserver/test_faults.py, runtime integration).
        with embedded_apiserver(workdir, ["--enable-fault-injection"]) as handle:
            yield handle
    else:
        from tests.realk8s.plane import real_control_plane

        with real_control_plane(workdir) as plane:
            yield Cluster("real", plane.kubeconfig, plane.server)


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[KubeClient]:
    """kq's API client to the test's backend; a test directory may define its own instead."""
    async with await KubeClient.connect(cluster.kubeconfig) as kube:
        yield kube


@pytest.fixture
def kubectl_cache(tmp_path: Path) -> Path:
    """A fresh discovery cache per test: kubectl otherwise caches discovery for hours."""
    return tmp_path / "kubectl-cache"


@pytest.fixture(autouse=True)
def _standalone_metrics_role() -> None:
    """Every test starts as a standalone replica: a test that runs kq's process in this one
    (tests/runtime) leaves the metrics role at follower, and the next test's in-process
    controllers would label their series so."""
    set_role(STANDALONE)


@pytest.fixture(autouse=True)
def _fresh_budget_book() -> None:
    """Every test starts with the budgets plugin's book as a fresh process has it: building
    its controller (``install_controllers``) marks the book as expecting one, and a test
    that never runs it would otherwise leave every later admission vetoed as not ready."""
    BOOK.reset()
    BOOK.expected = BOOK.ready = False
