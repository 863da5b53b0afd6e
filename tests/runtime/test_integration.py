"""The runtime against an API server: informer convergence and leader election across processes."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import pytest

from kq.config import KqConfig
from kq.config_file import parse_config
from kq.runtime.certs import inject_ca_bundle, provision_from_secret, service_dns_names
from kq.runtime.client import KubeClient, retry_on_conflict
from kq.runtime.errors import ApiError
from kq.runtime.events import NORMAL, EventRecorder
from kq.runtime.informer import Informer, InformerSettings
from kq.runtime.manager import Manager
from kq.runtime.process import run
from kq.runtime.resources import (
    EVENTS,
    LEASES,
    LOCAL_QUEUES,
    SECRETS,
    VALIDATING_WEBHOOKS,
    Resource,
)
from kq.runtime.store import EventType
from tests.harness import REPO, Cluster, eventually, present
from tests.kqrun import free_port
from tests.runtime.scratch import namespace

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)
QUICK = InformerSettings(reconnect_delay=0.05, backoff_initial=0.05, backoff_cap=0.5)


def config_map(name: str, ns: str, value: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": ns}, "data": {"v": value}}


async def internal(
    client: KubeClient, method: str, path: str, body: dict[str, object] | None = None
) -> None:
    # The embedded server's test hooks (faults, dropped watches, compaction).
    await client.request(method, path, body=body)


async def test_informer_converges_after_dropped_watches_and_compaction(cluster: Cluster) -> None:
    embedded = cluster.backend == "embedded"
    async with namespace(cluster, "rt") as (client, ns):
        informer = Informer(client, CONFIG_MAPS, namespace=ns, settings=QUICK)
        deleted: list[str] = []
        informer.add_handler(
            lambda c: (
                deleted.append(c.obj["metadata"]["name"]) if c.type is EventType.DELETED else None
            )
        )
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(informer.wait_synced(), 10)
            for i in range(30):
                await client.create(CONFIG_MAPS, config_map(f"cm-{i}", ns, "0"))
            if embedded:
                # Cut every watch and refuse new ones, so what follows happens unseen.
                await internal(
                    client,
                    "PUT",
                    "/kq/faults",
                    {"errorRate": 1.0, "errorCode": 500, "watchOnly": True, "match": ns},
                )
                await internal(client, "POST", "/kq/drop-watches")
            for i in range(10):
                await client.merge_patch(CONFIG_MAPS, f"cm-{i}", {"data": {"v": "1"}}, namespace=ns)
            for i in range(10, 20):
                await client.delete(CONFIG_MAPS, f"cm-{i}", ns)
            for i in range(30, 35):
                await client.create(CONFIG_MAPS, config_map(f"cm-{i}", ns, "0"))
            if embedded:
                # The informer's resume point is now compacted away: only a relist recovers.
                await internal(client, "POST", "/kq/compact")
                await internal(client, "PUT", "/kq/faults", {"errorRate": 0.0})

            fresh = await client.list(CONFIG_MAPS, namespace=ns)
            want = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in fresh["items"]}

            async def converged() -> dict[str, str] | None:
                have = {
                    o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                    for o in informer.store.values()
                }
                return have if have == want else None

            have = await eventually(converged, "the informer's store", within=20, interval=0.05)
            assert len(have) == 25
            assert sorted(deleted) == sorted(f"cm-{i}" for i in range(10, 20))
            assert all(
                present(informer.store.get(f"{ns}/cm-{i}"))["data"]["v"] == "1" for i in range(10)
            )
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            if embedded:
                await internal(client, "PUT", "/kq/faults", {"errorRate": 0.0})


# -- leader election across two `kq run` processes -------------------------------------------

LEASE = {"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "500ms"}


@contextmanager
def kq_run(
    cluster: Cluster, workdir: Path, ns: str, name: str
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    config = workdir / f"{name}.yaml"
    election = "\n".join(f"  {k}: {v}" for k, v in LEASE.items())
    config.write_text(
        f"namespace: {ns}\nleaderElection:\n{election}\n"
        f"health:\n  healthProbeBindAddress: 127.0.0.1:{free_port()}\n"
        f"metrics:\n  bindAddress: 127.0.0.1:{port}\n  secureServing: false\n"
        # Replicas share this host here, not a pod network: each needs its own webhook port.
        f"webhook:\n  port: {free_port()}\n  certDir: {workdir / name / 'certs'}\n"
    )
    with (workdir / f"{name}.log").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kq",
                "run",
                "--config",
                str(config),
                "--kubeconfig",
                str(cluster.kubeconfig),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env={**os.environ, "OTEL_SDK_DISABLED": "true"},
        )
    try:
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


async def leading(session: aiohttp.ClientSession, port: int) -> bool:
    try:
        async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
            text = await response.text()
    except aiohttp.ClientError:
        return False
    return any(
        line.startswith("leader_election_master_status{") and line.endswith(" 1.0")
        for line in text.splitlines()
    )


@pytest.mark.slow
async def test_two_processes_one_leader_and_takeover_after_a_kill(
    cluster: Cluster, tmp_path: Path
) -> None:
    async with namespace(cluster, "rt") as (client, ns), aiohttp.ClientSession() as session:
        with (
            kq_run(cluster, tmp_path, ns, "a") as (a, a_port),
            kq_run(cluster, tmp_path, ns, "b") as (b, b_port),
        ):
            ports = {a.pid: a_port, b.pid: b_port}

            async def states() -> dict[int, bool]:
                found = await asyncio.gather(*(leading(session, p) for p in ports.values()))
                state = dict(zip(ports, found, strict=True))
                assert sum(state.values()) <= 1, f"two leaders at once: {state}"
                return state

            async def wait_for_leader(among: set[int], limit: float) -> int:
                async def winner() -> int | None:
                    state = await states()
                    return next((pid for pid, lead in state.items() if lead and pid in among), None)

                return await eventually(winner, f"a leader among {among}", within=limit)

            first = await wait_for_leader({a.pid, b.pid}, 20)
            lease_name = KqConfig().leader_election.resource_name

            async def renewal() -> str:
                lease = await client.get(LEASES, lease_name, ns)
                return str(lease["spec"].get("renewTime", ""))

            renewals = {await renewal()}

            async def steady() -> bool:
                await states()  # asserts at most one leader
                renewals.add(await renewal())
                return len(renewals) >= 3

            # A while of steady state, two renewals long: still exactly one leader.
            await eventually(steady, "two lease renewals", within=10)
            (old, new) = (a, b) if first == a.pid else (b, a)
            old.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            old.wait()
            del ports[old.pid]
            await wait_for_leader({new.pid}, 8)
            takeover = time.monotonic() - killed
            # Up to the lease duration (4 s) after the last renewal seen, plus a retry period.
            assert takeover < 4.0 + 0.5 * 2 + 0.5, takeover

            new.send_signal(signal.SIGTERM)
            assert new.wait(timeout=10) == 0
            lease = await client.get(LEASES, "c1f6bfd2.kueue.x-k8s.io", ns)
            assert not lease["spec"].get("holderIdentity")  # released on clean shutdown
            assert lease["spec"]["leaseTransitions"] >= 1


async def test_writes_apply_status_patch_conflict_and_events(cluster: Cluster) -> None:
    async with namespace(cluster, "rt") as (client, ns):
        queue = {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": ns},
            "spec": {"clusterQueue": "cq"},
        }
        applied = await client.apply(LOCAL_QUEUES, queue)
        assert applied["metadata"]["managedFields"][0]["manager"] == "kq"
        stale = applied["metadata"]["resourceVersion"]
        patched = await client.merge_patch(
            LOCAL_QUEUES,
            "lq",
            {"status": {"pendingWorkloads": 3}},
            namespace=ns,
            resource_version=stale,
            subresource="status",
        )
        assert patched["status"]["pendingWorkloads"] == 3
        with pytest.raises(ApiError) as caught:
            await client.merge_patch(
                LOCAL_QUEUES,
                "lq",
                {"status": {"pendingWorkloads": 4}},
                namespace=ns,
                resource_version=stale,
                subresource="status",
            )
        assert caught.value.conflict

        async def bump() -> dict[str, object]:
            current = await client.get(LOCAL_QUEUES, "lq", ns)
            return await client.merge_patch(
                LOCAL_QUEUES,
                "lq",
                {"status": {"pendingWorkloads": 5}},
                namespace=ns,
                resource_version=current["metadata"]["resourceVersion"],
                subresource="status",
            )

        assert (await retry_on_conflict(bump))["status"] == {"pendingWorkloads": 5}

        await EventRecorder(client, namespace=ns).record(patched, NORMAL, "Pending", "waiting")
        events = await client.list(EVENTS, namespace=ns)
        [event] = events["items"]
        assert (event["reason"], event["message"], event["type"]) == (
            "Pending",
            "waiting",
            "Normal",
        )
        assert event["involvedObject"]["kind"] == "LocalQueue"


async def test_ca_bundle_is_injected_into_webhook_configurations(cluster: Cluster) -> None:
    name = f"kq-test-{uuid.uuid4().hex[:8]}"
    hook = {
        "name": "vlocalqueue.kueue.x-k8s.io",
        "clientConfig": {"service": {"name": "svc", "namespace": "kueue-system", "path": "/v"}},
        "rules": [
            {
                "apiGroups": ["kueue.x-k8s.io"],
                "apiVersions": ["v1beta1"],
                "operations": ["CREATE"],
                "resources": ["localqueues"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Ignore",
    }
    config = {"metadata": {"name": name}, "webhooks": [hook, {**hook, "name": "b.kq.dev"}]}
    async with await KubeClient.connect(cluster.kubeconfig) as client:
        await client.create(VALIDATING_WEBHOOKS, config)
        try:
            pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
            await inject_ca_bundle(client, pem, [name, "absent"])
            stored = await client.get(VALIDATING_WEBHOOKS, name)
            bundles = {h["clientConfig"]["caBundle"] for h in stored["webhooks"]}
            assert bundles == {base64.b64encode(pem).decode()}
        finally:
            await client.delete(VALIDATING_WEBHOOKS, name)


@pytest.mark.slow
async def test_leader_that_cannot_renew_exits_non_zero(cluster: Cluster, tmp_path: Path) -> None:
    if cluster.backend != "embedded":
        pytest.skip("failing lease writes needs the embedded server's fault hooks")
    async with namespace(cluster, "rt") as (client, ns), aiohttp.ClientSession() as session:
        with kq_run(cluster, tmp_path, ns, "a") as (process, port):
            await eventually(lambda: leading(session, port), "kq run to lead", within=20)
            match = f"/namespaces/{ns}/leases"
            await internal(client, "PUT", "/kq/faults", {"errorRate": 1.0, "match": match})
            try:
                broken = time.monotonic()
                code = await asyncio.to_thread(process.wait, 10)
                # Gone within the renew deadline (3 s) plus one retry period and start-up slack.
                assert time.monotonic() - broken < 3.0 + 0.5 + 1.0
                assert code == 1
            finally:
                await internal(client, "PUT", "/kq/faults", {"errorRate": 0.0})


async def test_replicas_agree_on_one_webhook_certificate(cluster: Cluster, tmp_path: Path) -> None:
    async with namespace(cluster, "rt") as (client, ns):
        dirs = [tmp_path / "a", tmp_path / "b"]
        names = service_dns_names("kueue-webhook-service", ns)
        await asyncio.gather(*(provision_from_secret(client, ns, "cert", d, names) for d in dirs))
        for name in ("ca.crt", "tls.crt", "tls.key"):
            assert (dirs[0] / name).read_bytes() == (dirs[1] / name).read_bytes()
        secret = await client.get(SECRETS, "cert", ns)
        assert base64.b64decode(secret["data"]["ca.crt"]) == (dirs[0] / "ca.crt").read_bytes()
        # A later start reuses the Secret instead of minting a new CA.
        await provision_from_secret(client, ns, "cert", tmp_path / "c", names)
        assert (tmp_path / "c" / "ca.crt").read_bytes() == (dirs[0] / "ca.crt").read_bytes()


async def test_kq_run_starts_leader_only_work_and_stops_cleanly_on_sigterm(
    cluster: Cluster, tmp_path: Path
) -> None:
    async with namespace(cluster, "rt") as (client, ns):
        config = parse_config(
            {
                "namespace": ns,
                "leaderElection": LEASE,
                "health": {"healthProbeBindAddress": f"127.0.0.1:{free_port()}"},
                "metrics": {"bindAddress": ""},
                "webhook": {"certDir": str(tmp_path / "certs")},
            }
        )
        started: list[str] = []

        async def admission() -> None:
            started.append("admission")
            os.kill(os.getpid(), signal.SIGTERM)  # as the kubelet does on a rollout
            await asyncio.Event().wait()

        async def setup(manager: Manager, _: KqConfig) -> None:
            manager.add("admission", admission, leader_only=True)

        code = await asyncio.wait_for(run(config, cluster.kubeconfig, setup), 20)
        assert code == 0
        assert started == ["admission"]
        lease = await client.get(LEASES, "c1f6bfd2.kueue.x-k8s.io", ns)
        assert not lease["spec"].get("holderIdentity")
