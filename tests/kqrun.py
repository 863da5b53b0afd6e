"""``kq run`` as a real process against a test cluster, as it runs in a cluster."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.harness import REPO, Cluster, wait_until


def install_plugin(source: Path, target: Path) -> Path:
    """``source`` (an example plugin's project) installed into ``target``, a directory for kq
    run's ``pythonpath``; without dependencies or build isolation, so offline."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(source)],
        check=True,
    )  # fmt: skip
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def webhook_ca(workdir: Path, port: int) -> bytes:
    """The CA of the webhook that ``kq run`` in ``workdir`` serves on ``port``, once it accepts
    connections: the certificates are written before the server listens, and a configuration
    with failurePolicy Fail refuses everything with "connection refused" until then."""
    ca = workdir / "certs" / "ca.crt"
    wait_until(ca.exists, f"{ca} to appear")

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_until(listening, f"the webhook on port {port}")
    return ca.read_bytes()


@contextmanager
def kq_run(
    cluster: Cluster,
    workdir: Path,
    namespace: str,
    extra_config: str = "",
    pythonpath: Path | None = None,
    metrics_port: int | None = None,
    secure_metrics: bool = False,
    webhook_port: int | None = None,
    metrics_options: str = "",
    args: tuple[str, ...] = (),
) -> Iterator[Path]:
    """Run ``kq run`` until the block ends; yields its log file. ``namespace`` must exist.

    ``metrics_port``: serve /metrics on that loopback port (by default, none is served), to
    anyone unless ``secure_metrics``; ``metrics_options``: more YAML lines of the
    ``metrics`` section, indented two spaces; ``args``: more command-line arguments."""
    metrics = f"127.0.0.1:{metrics_port}" if metrics_port else "''"
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "config.yaml"
    config.write_text(
        f"namespace: {namespace}\nhealth:\n  healthProbeBindAddress: 127.0.0.1:{free_port()}\n"
        f"metrics:\n  bindAddress: {metrics}\n  secureServing: {str(secure_metrics).lower()}\n"
        f"{metrics_options}"
        f"webhook:\n  port: {webhook_port or free_port()}\n  certDir: {workdir / 'certs'}\n"
        f"{extra_config}"
    )
    if "visibilityServer" not in extra_config:
        # Kueue's default port (8082) would make two kq runs on one machine (two test
        # sessions, say) fight over it.
        with config.open("a") as file:
            file.write(f"visibilityServer:\n  bindAddress: 127.0.0.1\n  bindPort: {free_port()}\n")
    log = workdir / "kq.log"
    env = {**os.environ, "OTEL_SDK_DISABLED": "true"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    env.pop("KQ_DISABLE_PLUGINS", None)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kq", "run", "--config", str(config),
             "--kubeconfig", str(cluster.kubeconfig), *args],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env,
        )  # fmt: skip
    try:
        yield log
    finally:
        process.kill()
        process.wait()
