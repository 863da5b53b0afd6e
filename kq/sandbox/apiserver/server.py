"""Start the API server: storage, CRDs, HTTP listener, kubeconfig; stop it cleanly."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import secrets
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from kq.sandbox.apiserver import limits, rbac_defaults
from kq.sandbox.apiserver.api import Api
from kq.sandbox.apiserver.app import Server
from kq.sandbox.apiserver.authn import Signer
from kq.sandbox.apiserver.context import Ctx
from kq.sandbox.apiserver.escalation import Escalation
from kq.sandbox.apiserver.gc import Collector
from kq.sandbox.apiserver.registry import CRD, NAMESPACE, Registry, ResourceType
from kq.sandbox.apiserver.store import Obj, Store
from kq.sandbox.apiserver.watch import Hub
from kq.sandbox.apiserver.webhooks import Webhooks

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class Options:
    data_dir: Path
    port: int = 0
    host: str = "127.0.0.1"
    # Always on by default: kubectl sends a bearer token over HTTPS only.
    tls: bool = True
    token: str | None = None
    history: int = 10_000
    bookmark_interval: float = 15.0
    # /kq/faults, /kq/compact and /kq/drop-watches answer only when this is set.
    fault_injection: bool = False


@dataclass
class Running:
    """A started server; ``stop()`` closes watches, the listener and the database."""

    server: Server
    runner: web.AppRunner
    kubeconfig: Path
    url: str
    tasks: list[asyncio.Task[Any]]
    webhooks: Webhooks

    async def stop(self) -> None:
        self.server.hub.close_all()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.runner.cleanup()
        await self.webhooks.close()
        self.server.store.close()


def _create_private(path: Path) -> None:
    # sqlite creates a database, and its -wal/-shm files, with the umask's mode (0644).
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


def _self_signed(data_dir: Path, host: str) -> tuple[Path, Path]:
    cert, key = data_dir / "tls.crt", data_dir / "tls.key"
    if not cert.exists() or not key.exists():
        subprocess.run(
            [
                "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                "-keyout", str(key), "-out", str(cert), "-days", "3650",
                "-subj", f"/CN={host}", "-addext", f"subjectAltName=IP:{host}",
            ],
            check=True,
            capture_output=True,
        )  # fmt: skip
        key.chmod(0o600)
    return cert, key


def write_kubeconfig(path: Path, url: str, token: str | None, ca: Path | None) -> None:
    cluster: dict[str, Any] = {"server": url}
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
    user: dict[str, Any] = {"token": token} if token else {}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kq", "cluster": cluster}],
        "users": [{"name": "kq", "user": user}],
        "contexts": [
            {"name": "kq", "context": {"cluster": "kq", "user": "kq", "namespace": "default"}}
        ],
        "current-context": "kq",
    }
    _write_private(path, yaml.safe_dump(config, sort_keys=False))


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by its owner only, from the first byte on."""
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)


def _private_dir(path: Path) -> None:
    """The state directory: every object (Secrets too) and the token live in it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    for name in ("state.db", "state.db-wal", "state.db-shm", "tls.key"):
        if (path / name).exists():
            (path / name).chmod(0o600)


def _signing_key(data_dir: Path) -> bytes:
    """The key of ServiceAccount tokens: kept, so tokens outlive a restart as upstream's do."""
    stored = data_dir / "sa-signing.key"
    if stored.is_file() and len(stored.read_text().strip()) == 64:
        return bytes.fromhex(stored.read_text().strip())
    key = secrets.token_bytes(32)
    _write_private(stored, key.hex() + "\n")
    return key


def _token(options: Options) -> str:
    """The bearer token: given, or the one this data directory was first served with."""
    if options.token:
        return options.token
    stored = options.data_dir / "token"
    if stored.is_file() and stored.read_text().strip():
        return stored.read_text().strip()
    token = secrets.token_urlsafe(32)
    _write_private(stored, token + "\n")
    return token


async def _bootstrap(api: Api, crds: list[dict[str, Any]]) -> None:
    for crd in api.store.select(CRD.storage):
        api.registry.register_crd(crd)
    for name in DEFAULT_NAMESPACES:
        if api.store.get(NAMESPACE.storage, "", name) is None:
            await api.create(NAMESPACE, "", {"metadata": {"name": name}}, Ctx())
    for storage, obj in rbac_defaults.missing(api.store):
        rt = api.registry.by_storage(storage)
        assert rt is not None
        await api.create(rt, obj["metadata"].get("namespace", ""), obj, Ctx())
    for crd in crds:
        existing = api.store.get(CRD.storage, "", crd["metadata"]["name"])
        if existing is None:
            await api.create(CRD, "", crd, Ctx())
        elif existing.get("spec") != crd.get("spec"):
            body = {**crd, "metadata": {**crd["metadata"], **existing["metadata"]}}
            await api.update(CRD, "", crd["metadata"]["name"], body, Ctx())


async def start(options: Options, crds: list[dict[str, Any]]) -> Running:
    _private_dir(options.data_dir)
    _create_private(options.data_dir / "state.db")
    store = Store(options.data_dir / "state.db", history=options.history)
    store.max_object = limits.MAX_OBJECT
    registry = Registry()
    api = Api(store, registry)
    hub = Hub(store)
    collector = Collector(api)
    webhooks = Webhooks(api)
    server = Server(store, registry, api, hub)
    escalation = Escalation(server.authorizer)

    async def admit(op: str, rt: ResourceType, obj: Obj, old: Obj | None, ctx: Ctx) -> Obj:
        escalation.check(op, rt, obj, ctx.user)
        return await webhooks.admit(op, rt, obj, old, ctx)

    api.admission = admit
    server.settings.bookmark_interval = options.bookmark_interval
    server.settings.fault_injection = options.fault_injection
    token = _token(options)
    server.signer = Signer(_signing_key(options.data_dir))
    await _bootstrap(api, crds)
    tasks = [asyncio.create_task(collector.run())]
    context = None
    ca = None
    if options.tls:
        ca, key = _self_signed(options.data_dir, options.host)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(ca, key)
    runner = web.AppRunner(server.application(token), handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, options.host, options.port, ssl_context=context, shutdown_timeout=1)
    await site.start()
    port = runner.addresses[0][1]
    server.address = f"{options.host}:{port}"
    scheme = "https" if options.tls else "http"
    url = f"{scheme}://{options.host}:{port}"
    kubeconfig = options.data_dir / "kubeconfig"
    write_kubeconfig(kubeconfig, url, token, ca)
    return Running(server, runner, kubeconfig, url, tasks, webhooks)
