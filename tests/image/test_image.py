"""The image `make image` builds, built and run (`make test-image`: KQ_IMAGE=1, root, Debian's
buildah, debootstrap, podman and runc).

The image is inspected (user, entrypoint, size), run for `kq version` and `kq run --help`,
searched for build tools and caches, and finally run as deploy/ runs it: a read-only root
filesystem with only the webhook certificate directory writable, as user 65532, `kq run`
against a real kube-apiserver of its own (tests/realk8s) until /readyz answers, it holds the
leader Lease and it has put its CA into the webhook configurations.
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kq.config import Webhook
from tests.harness import REPO, wait_until

pytestmark = pytest.mark.skipif(
    os.environ.get("KQ_IMAGE") != "1",
    reason="builds and runs the image: `make test-image` (KQ_IMAGE=1; root, buildah, podman)",
)

BUILD_SCRIPT = REPO / "deploy" / "image" / "build.sh"
DEPLOY = REPO / "deploy"
MAX_SIZE = 250 * 1024 * 1024
BUILD_TOOLS = ("gcc", "cc", "c++", "g++", "clang", "make", "pip", "pip3", "git", "curl", "wget")


def podman_run(*args: str) -> list[str]:
    """`podman run` as this sandbox allows: runc (crun refuses hybrid cgroups here) and rlimits
    no higher than ours (podman's defaults need CAP_SYS_RESOURCE). Harmless elsewhere."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    nproc = min(resource.getrlimit(resource.RLIMIT_NPROC)[0], 4096)
    return [
        "podman", "run", "--rm", "--runtime", "runc",
        "--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}",
        "--read-only", "--read-only-tmpfs=false", *args,
    ]  # fmt: skip


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def image() -> str:
    """Build the image (the debootstrapped base is cached; about 45 s warm, 75 s cold)."""
    done = run("bash", str(BUILD_SCRIPT), timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.strip().splitlines()[-1]


def inspect(image: str) -> dict[str, Any]:
    done = run("podman", "image", "inspect", image)
    assert done.returncode == 0, done.stderr
    [found] = json.loads(done.stdout)
    assert isinstance(found, dict)
    return found


def test_image_runs_kq_run_as_a_non_root_user(image: str) -> None:
    config = inspect(image)["Config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["kq", "run"]
    # /tmp is kq's temporary directory, writable through deploy/'s emptyDir.
    assert not [e for e in config["Env"] if e.startswith("TMPDIR=")]


def test_image_is_small(image: str) -> None:
    assert inspect(image)["Size"] < MAX_SIZE


def test_kq_version_and_run_help(image: str) -> None:
    done = run(*podman_run("--network", "none", "--entrypoint", "kq", image, "version"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kq 0.1.0")
    for plugin in ("job_batch", "job_jobset", "check_provisioning"):
        assert plugin in done.stdout
    done = run(*podman_run("--network", "none", image, "--help"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: kq run")


def test_no_build_tools_or_caches_are_left(image: str) -> None:
    script = (
        f"for tool in {' '.join(BUILD_TOOLS)}; do command -v $tool; done; "
        "find /root/.cache /var/lib/apt/lists /var/cache/apt -mindepth 1 2>/dev/null; "
        "find / -xdev \\( -name '*.whl' -o -name 'pip' -o -name '*.a' \\) -print 2>/dev/null; "
        "python3 -c 'import pip' 2>/dev/null && echo pip importable; "
        "touch /probe 2>/dev/null && echo root filesystem writable; "
        "openssl version >&2"
    )
    # As root, to see every directory; kq itself runs as 65532.
    done = run(
        *podman_run("--network", "none", "--user", "0", "--entrypoint", "sh", image, "-c", script)
    )
    assert done.stdout.split() == [], f"left in the image: {done.stdout}"
    assert done.stderr.startswith("OpenSSL 3."), done.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def container_name() -> Iterator[str]:
    name = f"kq-image-test-{secrets.token_hex(4)}"
    yield name
    run("podman", "rm", "--force", "--time", "5", name)


def test_kq_run_with_a_read_only_root_filesystem_against_a_real_apiserver(
    image: str, container_name: str, tmp_path: Path
) -> None:
    from tests.realk8s.plane import real_control_plane

    health, metrics, webhook, visibility = (free_port() for _ in range(4))
    [configmap] = [d for d in yaml.safe_load_all((DEPLOY / "config.yaml").read_text()) if d]
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    config["health"]["healthProbeBindAddress"] = f"127.0.0.1:{health}"
    config["metrics"]["bindAddress"] = f"127.0.0.1:{metrics}"
    config["webhook"]["port"] = webhook
    config["visibilityServer"] = {"bindPort": visibility}
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config))

    with real_control_plane(tmp_path / "plane") as plane:

        def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
            return run("kubectl", "--kubeconfig", str(plane.kubeconfig), *args)

        done = kubectl(
            "apply", "-f", str(DEPLOY / "namespace.yaml"), "-f", str(DEPLOY / "webhooks.yaml")
        )
        assert done.returncode == 0, done.stderr
        # The container's user reads the kubeconfig, its CA file and the configuration.
        run("chmod", "-R", "a+rX", str(tmp_path))
        log = tmp_path / "kq.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                podman_run(
                    *("--name", container_name, "--network", "host"),
                    *("--tmpfs", "/tmp:mode=1777"),
                    *("--tmpfs", f"{Webhook().cert_dir}:mode=1777"),
                    *("--volume", f"{tmp_path}:{tmp_path}:ro"),
                    image,
                    *("--config", str(config_file), "--kubeconfig", str(plane.kubeconfig)),
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:

            def ready() -> bool:
                assert process.poll() is None, log.read_text()[-4000:]
                try:
                    url = f"http://127.0.0.1:{health}/readyz"
                    with urllib.request.urlopen(url, timeout=2) as response:
                        status: int = response.status
                        return status == 200
                except (urllib.error.URLError, ConnectionError):
                    return False

            wait_until(ready, "kq run's /readyz in the container", within=90, interval=0.5)

            def lease_holder() -> str:
                done = kubectl(
                    "get", "lease", "-n", "kq-system", "c1f6bfd2.kueue.x-k8s.io",
                    "-o", "jsonpath={.spec.holderIdentity}",
                )  # fmt: skip
                return done.stdout.strip()

            wait_until(lease_holder, "kq run to take the leader Lease", within=60, interval=0.5)

            def ca_injected() -> bool:
                done = kubectl(
                    "get", "mutatingwebhookconfiguration", "kueue-mutating-webhook-configuration",
                    "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}",
                )  # fmt: skip
                return bool(done.stdout.strip())

            wait_until(ca_injected, "kq run to inject its CA", within=60, interval=0.5)
        finally:
            run("podman", "stop", "--time", "10", container_name)
            process.wait(timeout=30)
        assert "Traceback" not in log.read_text(), log.read_text()[-4000:]
