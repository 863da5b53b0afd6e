"""The helm binary (built by build.sh from pinned Go modules) and the objects charts render."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from tests.harness import REPO

BUILD_SCRIPT = Path(__file__).resolve().parent / "build.sh"
CHART = REPO / "deploy" / "helm" / "kq"
DEPLOY = REPO / "deploy"

# The labels the chart adds to every object's metadata besides deploy/'s (Helm's own).
HELM_LABELS = frozenset(
    {
        "helm.sh/chart",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/managed-by",
        "app.kubernetes.io/version",
    }
)

Key = tuple[str, str, str, str]
"""(apiVersion, kind, namespace, name) of an object."""


class HelmBuildError(RuntimeError):
    """build.sh could not build helm."""


def ensure_helm() -> Path:
    """Build helm if the cache does not match the pins (a cold build takes about 3 minutes)."""
    done = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines or not Path(lines[-1]).is_file():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
        raise HelmBuildError(f"{BUILD_SCRIPT} failed with exit code {done.returncode}:\n{tail}")
    return Path(lines[-1])


class Helm:
    """The helm binary, with its config, cache and data directories kept under `home`."""

    def __init__(self, binary: Path, home: Path) -> None:
        self.binary = binary
        self.env = {
            **os.environ,
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
        }

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.binary), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )

    def template(self, *args: str) -> list[dict[str, Any]]:
        """`helm template kq CHART ARGS...` parsed; fails the test if helm does."""
        done = self.run("template", "kq", str(CHART), *args)
        assert done.returncode == 0, done.stderr
        return documents(done.stdout)


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def key(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def by_key(objects: Iterable[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    out: dict[Key, dict[str, Any]] = {}
    for obj in objects:
        assert key(obj) not in out, f"rendered twice: {key(obj)}"
        out[key(obj)] = obj
    return out


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without Helm's own labels, with each ConfigMap's `*.yaml` data parsed (the
    chart writes kq's configuration with sorted keys)."""
    out: dict[str, Any] = yaml.safe_load(yaml.safe_dump(obj))
    labels = out["metadata"].get("labels")
    if labels is not None:
        for label in HELM_LABELS:
            labels.pop(label, None)
    if out["kind"] == "ConfigMap":
        out["data"] = {
            name: yaml.safe_load(value) if name.endswith(".yaml") else value
            for name, value in (out.get("data") or {}).items()
        }
    return out
