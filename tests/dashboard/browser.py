"""Debian's Chromium, headless, as the dashboard's tests drive it: the DOM after the page's
script ran, and a screenshot. Missing Chromium skips the test, except in CI, where
``.ci/run`` installs it and its absence is a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--disable-dev-shm-usage",
)  # fmt: skip
SCRIPT_BUDGET_MS = 8000
"""Virtual time the page gets before the dump: its first poll of ``fragment`` must be done."""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    why = "chromium is not installed (apt-get install -y chromium, as .ci/run does)"
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


def _run(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def dump_dom(url: str, profile: Path) -> str:
    done = _run([f"--virtual-time-budget={SCRIPT_BUDGET_MS}", "--dump-dom", url], profile)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


def screenshot(url: str, path: Path, profile: Path, size: tuple[int, int]) -> Path:
    done = _run([f"--window-size={size[0]},{size[1]}", f"--screenshot={path}", url], profile)
    assert done.returncode == 0, done.stderr[-2000:]
    assert path.is_file(), done.stderr[-2000:]
    return path
