"""The real control plane starts, the real kubectl and kubernetes_asyncio can use it, it stops.

Skipped unless the binaries are built (tests/realk8s/build.sh) or KQ_REALK8S=1; with
KQ_REALK8S=1 the binaries are built if needed and any failure fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client, config

from tests.realk8s.plane import ControlPlane, binaries_built, real_control_plane

pytestmark = pytest.mark.realk8s


def _required() -> bool:
    return os.environ.get("KQ_REALK8S") == "1"


@pytest.fixture(scope="module")
def plane_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("realk8s")


@pytest.fixture(scope="module")
def plane(plane_workdir: Path) -> Iterator[ControlPlane]:
    if not _required() and binaries_built() is None:
        pytest.skip(
            "real kube-apiserver/etcd not built: run tests/realk8s/build.sh "
            "(or set KQ_REALK8S=1 to build them and require these tests)"
        )
    with real_control_plane(plane_workdir) as running:
        yield running


def kubectl(plane: ControlPlane, cache_dir: Path, *args: str) -> str:
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig), "KUBECACHEDIR": str(cache_dir)}
    result = subprocess.run(
        ["kubectl", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def test_real_kubectl(plane: ControlPlane, tmp_path: Path) -> None:
    cache = tmp_path / "kubectl-cache"

    version = json.loads(kubectl(plane, cache, "version", "-o", "json"))
    assert version["serverVersion"]["major"] == "1"
    assert version["serverVersion"]["minor"] == "32"
    assert version["serverVersion"]["gitVersion"].startswith("v1.32.")

    assert "namespace/x created" in kubectl(plane, cache, "create", "namespace", "x")
    namespace = json.loads(kubectl(plane, cache, "get", "ns", "x", "-o", "json"))
    assert namespace["metadata"]["name"] == "x"
    assert namespace["status"]["phase"] == "Active"


async def test_kubernetes_asyncio(plane: ControlPlane) -> None:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(plane.kubeconfig), client_configuration=configuration
    )
    async with client.ApiClient(configuration) as api:
        core = client.CoreV1Api(api)
        await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="y")))
        namespaces = await core.list_namespace()
    names = {item.metadata.name for item in namespaces.items}
    assert {"default", "y"} <= names


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


def test_stops_without_orphans(tmp_path: Path) -> None:
    if not _required() and binaries_built() is None:
        pytest.skip("real kube-apiserver/etcd not built: run tests/realk8s/build.sh")
    workdir = tmp_path / "plane"
    with real_control_plane(workdir) as running:
        assert len(_processes_mentioning(str(workdir))) == 2
        assert running.server.startswith("https://127.0.0.1:")
    assert _processes_mentioning(str(workdir)) == []
    assert (workdir / "etcd.log").exists()
    assert (workdir / "kube-apiserver.log").exists()
