"""The user's kubeconfig, as kubectl reads it: ``--kubeconfig``, else ``KUBECONFIG``, else
``~/.kube/config``; ``--context`` picks a context; its namespace is the default one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from kq.runtime.client import ClientSettings, KubeClient


def kubeconfig_path(flag: str | None) -> Path:
    if flag:
        return Path(flag)
    env = os.environ.get("KUBECONFIG", "")
    first = next((p for p in env.split(os.pathsep) if p), "")
    return Path(first) if first else Path.home() / ".kube" / "config"


def default_namespace(path: Path, context: str | None) -> str:
    """The chosen context's namespace, or ``default``."""
    try:
        doc: dict[str, Any] = yaml.safe_load(path.read_text()) or {}
    except OSError:
        return "default"
    name = context or doc.get("current-context")
    for entry in doc.get("contexts") or ():
        if entry.get("name") == name:
            return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


async def connect(path: Path, context: str | None) -> KubeClient:
    configuration = k8s_client.Configuration()
    await k8s_config.load_kube_config(
        config_file=str(path), context=context, client_configuration=configuration
    )
    return KubeClient(k8s_client.ApiClient(configuration), ClientSettings(user_agent="kubectl-kq"))
