"""The storm's processes: one embedded API server and the ``kq run`` replicas, as signals see them.

Both are real processes on loopback, so a kill -9 is a kill -9. The API server keeps its port and
data directory across restarts, so the replicas' kubeconfig stays valid, as a Service address
stays valid when kube-apiserver restarts behind it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kq.sandbox.readyline import stop, wait_for_kubeconfig
from tests.harness import REPO
from tests.kqrun import free_port

READY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Election:
    """Short lease timings, so a killed leader is replaced within a short run.

    kq's configuration rules hold: renewDeadline < leaseDuration, retryPeriod < renewDeadline/1.2.
    """

    lease_duration: float = 3.0
    renew_deadline: float = 2.0
    retry_period: float = 0.5

    @property
    def handover_bound(self) -> float:
        """How long a hand-over may take after the leader dies: the lease must run out as its
        successor sees it (it starts counting at its next look), plus a jittered retry."""
        return self.lease_duration + 2 * 1.2 * self.retry_period + 1.0


def _env() -> dict[str, str]:
    env = {**os.environ, "OTEL_SDK_DISABLED": "true"}
    env.pop("KQ_DISABLE_PLUGINS", None)
    return env


@dataclass
class ApiServer:
    """``kq apiserver --enable-fault-injection`` on a fixed port, restartable on the same state."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[str] | None = None
    kubeconfig: Path | None = None
    starts: int = 0

    def start(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.data_dir / f"apiserver-{self.starts}.log"
        args = ["--data-dir", str(self.data_dir), "--port", str(self.port)]
        with log_path.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kq", "apiserver", *args, "--enable-fault-injection"],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                cwd=REPO,
                env=_env(),
            )
        self.starts += 1
        self.kubeconfig = wait_for_kubeconfig(self.process, log_path, READY_TIMEOUT_S)
        return self.kubeconfig

    def kill(self) -> None:
        """kill -9: whatever was not yet committed is lost, as on a node crash."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def close(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None


@dataclass
class Replica:
    """One ``kq run`` process; restarted (as a Deployment would) under the same name."""

    name: str
    workdir: Path
    kubeconfig: Path
    namespace: str
    election: Election
    process: subprocess.Popen[bytes] | None = None
    paused: bool = False
    held_down: bool = False
    """A fault keeps it down: the supervisor does not restart it meanwhile."""
    starts: int = 0
    exits: list[int] = field(default_factory=list)

    def _config(self) -> Path:
        e = self.election
        config = self.workdir / "config.yaml"
        config.write_text(
            f"namespace: {self.namespace}\n"
            f"health:\n  healthProbeBindAddress: 127.0.0.1:{free_port()}\n"
            "metrics:\n  bindAddress: ''\n  secureServing: false\n"
            f"webhook:\n  port: {free_port()}\n  certDir: {self.workdir / 'certs'}\n"
            f"leaderElection:\n  leaseDuration: {e.lease_duration}s\n"
            f"  renewDeadline: {e.renew_deadline}s\n  retryPeriod: {e.retry_period}s\n"
        )
        return config

    @property
    def log_path(self) -> Path:
        return self.workdir / f"kq-{self.starts}.log"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self._config()
        self.starts += 1
        with self.log_path.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kq",
                    "run",
                    "--config",
                    str(config),
                    "--kubeconfig",
                    str(self.kubeconfig),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=_env(),
            )
        self.paused = False

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def reap(self) -> bool:
        """True once if the process exited on its own (lost leadership, crashed)."""
        if self.process is None or self.process.poll() is None:
            return False
        self.exits.append(self.process.returncode)
        self.process = None
        return True

    def signal(self, signum: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signum)
            self.paused = signum == signal.SIGSTOP or (self.paused and signum != signal.SIGCONT)

    def kill(self) -> None:
        if self.process is not None:
            if self.paused:
                self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()
            self.exits.append(self.process.returncode)
            self.process = None
            self.paused = False

    async def terminate(self, grace: float = 10.0) -> None:
        """SIGTERM, as a rolling update does: the leader releases its lease on the way out."""
        process = self.process
        if process is None:
            return
        self.signal(signal.SIGCONT)
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, grace)
        except subprocess.TimeoutExpired:
            process.kill()
        self.exits.append(process.wait())
        self.process = None

    def logs(self) -> list[Path]:
        return sorted(self.workdir.glob("kq-*.log"))
