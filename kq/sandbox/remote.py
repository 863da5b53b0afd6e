"""``kq dev --kubeconfig``: the simulated cluster and kq on an API server someone else runs.

It is meant for a bare API server (kube-apiserver and etcd, as ``tests/realk8s`` runs them):
the simulated cluster plays scheduler, kubelets, job controllers and garbage collector there,
which would fight real ones. kq dev installs what it needs: kq's CRDs the server lacks, and
its webhook configurations, which point at this process's loopback port. Those go when it
stops, since their ``failurePolicy: Fail`` would otherwise refuse every Job the server is
asked for. The rest (nodes, jobs, queues, the CRDs) is the cluster's state and stays in the
server, as the embedded server's stays in the data directory.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kq.crds import builtin_crds
from kq.runtime.client import KubeClient, load_configuration
from kq.runtime.errors import ApiError
from kq.runtime.resources import JOBS
from kq.sandbox.webhooks import CA_WAIT_S, webhook_configurations

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ESTABLISHED_TIMEOUT_S = 60.0
PROBE_NAMESPACE = "default"
"""Where the webhook probe's dry-run Job is "created": kq manages jobs there by default."""


async def server_url(kubeconfig: Path) -> str:
    """The API server's URL as the kubeconfig's current context names it."""
    return str((await load_configuration(kubeconfig)).host)


async def install_missing_crds(client: KubeClient) -> list[str]:
    """Create kq's CRDs the server does not have and wait until they are served; a CRD already
    there is left as it is (whoever installed it chose its version)."""
    created = []
    for crd in builtin_crds():
        try:
            await client.request("POST", CRDS_PATH, body=crd)
        except ApiError as exc:
            if not exc.conflict:
                raise
            continue
        created.append(str(crd["metadata"]["name"]))
    async with asyncio.timeout(ESTABLISHED_TIMEOUT_S):
        for name in created:
            await _established(client, name)
    return created


async def _established(client: KubeClient, name: str) -> None:
    """Until the server serves the CRD's kind (polled: no watch for one condition)."""
    while True:
        crd = await client.request("GET", f"{CRDS_PATH}/{name}")
        conditions = (crd.get("status") or {}).get("conditions") or ()
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return
        await asyncio.sleep(0.1)


async def unregister_webhooks(client: KubeClient) -> None:
    """Delete kq dev's webhook configurations (gone already is fine)."""
    for resource, body in webhook_configurations(0):
        try:
            await client.delete(resource, body["metadata"]["name"])
        except ApiError as exc:
            if not exc.not_found:
                raise


def _probe_job() -> dict[str, Any]:
    container = {"name": "probe", "image": "busybox", "command": ["true"]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "kq-dev-webhook-probe",
            "namespace": PROBE_NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "kq-dev-webhook-probe"},
        },
        "spec": {
            "suspend": False,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


async def wait_for_webhooks_called(client: KubeClient) -> None:
    """Until the server sends Jobs through kq's webhook: kube-apiserver picks configurations and
    their CA up from a watch, so a Job created at once could still run unqueued. The probe is
    a dry run, which the webhook suspends and the server does not store."""
    path = JOBS.path(PROBE_NAMESPACE)
    async with asyncio.timeout(CA_WAIT_S):
        while True:
            try:
                answer = await client.request(
                    "POST", path, body=_probe_job(), query=[("dryRun", "All")]
                )
                if answer["spec"].get("suspend") is True:
                    return
            except ApiError as exc:
                if exc.status not in (500, 503):  # the webhook not reachable (yet)
                    raise
            await asyncio.sleep(0.2)
