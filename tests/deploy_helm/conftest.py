"""The `helm` fixture: build.sh's helm, built once and cached in ~/.cache/kq.

If helm cannot be built (no Go toolchain, no module proxy) the chart's tests are skipped with
the build's output as the reason; under KQ_REALK8S=1 (`make test`, where the Go builds are
expected to work) they fail instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.deploy_helm.helm import Helm, HelmBuildError, ensure_helm


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    try:
        return ensure_helm()
    except HelmBuildError as exc:
        if os.environ.get("KQ_REALK8S") == "1":
            raise
        pytest.skip(f"helm could not be built from the Go module proxy: {exc}")


@pytest.fixture
def helm(helm_binary: Path, tmp_path: Path) -> Helm:
    return Helm(helm_binary, tmp_path / "helm-home")
