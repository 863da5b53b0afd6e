"""Black-box handles on an API server: the embedded one (a `kq apiserver` process) or a real one.

Both are separate processes, so tests may call the real kubectl synchronously and talk HTTP to
either backend the same way a cluster is talked to. Also the small helpers every layer of the
suite shares: ``present``, and the one way to wait for something, polling with a deadline
(``eventually``, ``until_passes``, and ``wait_until`` for synchronous tests).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kq.runtime.errors import ApiError
from kq.sandbox.readyline import stop, wait_for_kubeconfig

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 30.0
T = TypeVar("T")


def present(value: T | None, what: str = "the value") -> T:
    """``value``, which the test expects to be there (a condition, an object, a state)."""
    assert value is not None, f"{what} is missing"
    return value


def _never(_: Exception) -> bool:
    return False


def not_found(exc: Exception) -> bool:
    """A 404 from the API server: the object is not there yet (or no longer)."""
    return isinstance(exc, ApiError) and exc.not_found


async def eventually(
    probe: Callable[[], Awaitable[T | None]],
    what: str,
    *,
    within: float = 20.0,
    interval: float = 0.1,
    retry: Callable[[Exception], bool] = _never,
) -> T:
    """Poll ``probe`` until it returns something truthy, and return that.

    An exception for which ``retry`` is true counts as a miss; any other propagates. After
    ``within`` seconds an AssertionError names ``what`` and the last result.
    """
    deadline = time.monotonic() + within
    last: T | Exception | None = None
    while True:
        try:
            found = await probe()
        except Exception as exc:
            if not retry(exc):
                raise
            last = exc
        else:
            if found:
                return found
            last = found
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {within:g} s waiting for {what}; last: {last!r}")
        await asyncio.sleep(interval)


async def until_passes(
    probe: Callable[[], Awaitable[T]],
    what: str,
    *,
    within: float = 20.0,
    interval: float = 0.1,
    retry: Callable[[Exception], bool] = _never,
) -> T:
    """``probe``'s value once it stops failing: an AssertionError, or an exception for which
    ``retry`` is true, is tried again; after ``within`` seconds the last failure is raised."""
    deadline = time.monotonic() + within
    while True:
        try:
            return await probe()
        except Exception as exc:
            if not (isinstance(exc, AssertionError) or retry(exc)):
                raise
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"timed out after {within:g} s waiting for {what}: {exc}"
                ) from exc
        await asyncio.sleep(interval)


def wait_until(
    check: Callable[[], T | None], what: str, *, within: float = 30.0, interval: float = 0.1
) -> T:
    """``eventually`` for synchronous tests: poll ``check`` until it returns something truthy."""
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {within:g} s waiting for {what}; last: {found!r}"
            )
        time.sleep(interval)


@dataclass(frozen=True)
class Cluster:
    """A running API server: which backend, its kubeconfig and base URL."""

    backend: str
    kubeconfig: Path
    server: str

    def kubectl(
        self, *args: str, input: str | None = None, cache_dir: Path, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this cluster with its own discovery cache."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBECACHEDIR": str(cache_dir)}
        return subprocess.run(
            ["kubectl", *args],
            input=input,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )

    def refusal(self, obj: dict[str, Any], *, cache_dir: Path, verb: str = "create") -> str:
        """kubectl's error for ``verb -f`` of ``obj``. A webhook configuration reaches the API
        server through a watch, so an early success is deleted and tried again."""
        body = json.dumps(obj)

        def refused() -> str | None:
            done = self.kubectl(verb, "-f", "-", input=body, cache_dir=cache_dir)
            if done.returncode != 0:
                return done.stderr
            self.kubectl("delete", "-f", "-", input=body, cache_dir=cache_dir)
            return None

        name = f"{obj.get('kind')} {obj.get('metadata', {}).get('name')}"
        return wait_until(refused, f"kubectl {verb} of {name} refused", interval=0.5)


def _server_from_kubeconfig(kubeconfig: Path) -> str:
    match = re.search(r"server:\s*(\S+)", kubeconfig.read_text())
    if not match:
        raise RuntimeError(f"{kubeconfig}: no server URL")
    return match.group(1).strip("'\"")


@contextmanager
def embedded_apiserver(data_dir: Path, extra_args: Sequence[str] = ()) -> Iterator[Cluster]:
    """Start `kq apiserver` on a free port and wait for its `ready <kubeconfig>` line."""
    log_path = data_dir / "apiserver.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kq", "apiserver", "--data-dir", str(data_dir), *extra_args],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=REPO,
        )
    try:
        kubeconfig = wait_for_kubeconfig(process, log_path, READY_TIMEOUT_S)
        yield Cluster("embedded", kubeconfig, _server_from_kubeconfig(kubeconfig))
    finally:
        stop(process)
