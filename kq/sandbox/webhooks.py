"""kq's admission webhooks registered in the sandbox by URL, as Kueue's manifests register them
by Service in a cluster; the controller publishes its CA into them once it serves."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from kq.runtime.client import KubeClient
from kq.runtime.errors import ApiError
from kq.runtime.resources import MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS, Resource
from kq.webhooks.routes import MUTATE_JOBS, VALIDATE_JOBS, VALIDATE_KUEUE

JOB_RESOURCES = (
    ("batch", "v1", "jobs"),
    ("jobset.x-k8s.io", "v1alpha2", "jobsets"),
    ("ray.io", "v1", "rayjobs"),
    ("kubeflow.org", "v2beta1", "mpijobs"),
)
POD_RESOURCES = (("", "v1", "pods"),)
SERVING_RESOURCES = (
    ("apps", "v1", "deployments"),
    ("apps", "v1", "statefulsets"),
    ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
)
"""Serving owners: defaulted on create and update, as upstream's webhooks."""
SYSTEM_NAMESPACES = ("kube-system", "kueue-system")
CA_WAIT_S = 30.0


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _webhook(
    name: str, url: str, operations: list[str], resources: tuple[tuple[str, str, str], ...]
) -> dict[str, Any]:
    return {
        "name": name,
        "clientConfig": {"url": url},
        "rules": [
            {
                "apiGroups": [group],
                "apiVersions": [version],
                "resources": [plural],
                "operations": operations,
            }
            for group, version, plural in resources
        ],
        # A job created while kq cannot suspend it would run unqueued: refuse instead.
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 10,
    }


def _pod_webhook(name: str, url: str, operations: list[str]) -> dict[str, Any]:
    """Pods are gated by the same handlers as jobs, never in the system namespaces (upstream's
    default), so a kq that is down cannot stop the control plane's own pods."""
    hook = _webhook(name, url, operations, POD_RESOURCES)
    hook["namespaceSelector"] = {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": list(SYSTEM_NAMESPACES),
            }
        ]
    }
    return hook


def webhook_configurations(
    port: int, *, pods: bool = False, serving: bool = True
) -> list[tuple[Resource, dict[str, Any]]]:
    """The mutating and validating configurations, named as ``kq run`` publishes its CA.

    ``pods``: also route pods through kq, for the ``pod`` framework (every pod creation then
    waits on kq, so only when that framework runs). ``serving``: also Deployments, and (without
    ``pods``) the pods their webhook labelled ``kueue.x-k8s.io/managed`` only.
    """
    base = f"https://127.0.0.1:{port}"
    mutating_hooks = [
        _webhook("mjobs.kueue.x-k8s.io", base + MUTATE_JOBS, ["CREATE"], JOB_RESOURCES)
    ]
    validating_hooks = [
        _webhook("vjobs.kueue.x-k8s.io", base + VALIDATE_JOBS, ["CREATE", "UPDATE"], JOB_RESOURCES),
        _webhook(
            "vclusterqueue.kueue.x-k8s.io",
            base + VALIDATE_KUEUE,
            ["CREATE", "UPDATE"],
            (
                ("kueue.x-k8s.io", "v1beta1", "clusterqueues"),
                ("kueue.x-k8s.io", "v1beta1", "cohorts"),
                # The priority-boost annotation, checked when the gate is on.
                ("kueue.x-k8s.io", "v1beta1", "workloads"),
                ("kq.dev", "v1alpha1", "budgets"),
            ),
        ),
    ]
    if pods:
        mutating_hooks.append(_pod_webhook("mpod.kueue.x-k8s.io", base + MUTATE_JOBS, ["CREATE"]))
        validating_hooks.append(
            _pod_webhook("vpod.kueue.x-k8s.io", base + VALIDATE_JOBS, ["CREATE", "UPDATE"])
        )
    if serving:
        both = ["CREATE", "UPDATE"]
        mutating_hooks.append(
            _webhook("mservingjobs.kueue.x-k8s.io", base + MUTATE_JOBS, both, SERVING_RESOURCES)
        )
        validating_hooks.append(
            _webhook("vservingjobs.kueue.x-k8s.io", base + VALIDATE_JOBS, both, SERVING_RESOURCES)
        )
    if serving and not pods:
        hook = _pod_webhook("mservingpod.kueue.x-k8s.io", base + MUTATE_JOBS, ["CREATE"])
        hook["objectSelector"] = {"matchLabels": {"kueue.x-k8s.io/managed": "true"}}
        mutating_hooks.append(hook)
    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "kueue-mutating-webhook-configuration"},
        "webhooks": mutating_hooks,
    }
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "kueue-validating-webhook-configuration"},
        "webhooks": validating_hooks,
    }
    return [(MUTATING_WEBHOOKS, mutating), (VALIDATING_WEBHOOKS, validating)]


async def register_webhooks(client: KubeClient, port: int) -> None:
    """Create or replace both configurations (a restarted sandbox serves on a new port)."""
    for resource, body in webhook_configurations(port):
        name = body["metadata"]["name"]
        try:
            await client.delete(resource, name)
        except ApiError as exc:
            if exc.status != 404:
                raise
        await client.create(resource, body)


async def wait_for_ca(client: KubeClient) -> None:
    """Until the controller has published its CA into every webhook (it then serves TLS)."""
    async with asyncio.timeout(CA_WAIT_S):
        while True:
            published = True
            for resource, body in webhook_configurations(0):
                live = await client.get(resource, body["metadata"]["name"])
                published &= all(
                    w.get("clientConfig", {}).get("caBundle") for w in live.get("webhooks") or ()
                )
            if published:
                return
            await asyncio.sleep(0.2)
