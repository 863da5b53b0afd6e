"""A real Kubernetes control plane for tests: etcd + kube-apiserver built by build.sh.

`real_control_plane(workdir)` starts both on free loopback ports with throw-away certificates,
a static admin token and a kubeconfig, applies the CRDs under `deploy/crds/` (those whose
kueue.x-k8s.io versions differ calling kq's conversion webhook, served here on loopback) and
stops both processes on exit. Everything (certificates, etcd data, logs) lives in `workdir`.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import secrets
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from kq.webhooks.conversion import with_conversion
from tests.harness import wait_until
from tests.realk8s.conversion import conversion_webhook

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD_SCRIPT = HERE / "build.sh"
CRDS_DIR = REPO / "deploy" / "crds"

READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 10.0
START_ATTEMPTS = 3  # a free port can be taken by someone else before the server binds it
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"


class RealK8sError(RuntimeError):
    """The real control plane could not be built or started."""


@dataclass(frozen=True)
class ControlPlane:
    """A running kube-apiserver: kubeconfig, base URL, admin bearer token and its CA."""

    kubeconfig: Path
    server: str
    token: str
    ca_file: Path


def binaries_built() -> Path | None:
    """The bin directory if build.sh's cached binaries match its pins, without building."""
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        return None
    return Path(result.stdout.strip().splitlines()[-1])


def ensure_binaries() -> Path:
    """Build kube-apiserver and etcd if needed (a cold build takes long) and return their dir."""
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise RealK8sError(
            f"{BUILD_SCRIPT} failed with exit code {result.returncode}:\n"
            f"{_tail(result.stdout + result.stderr, 60)}"
        )
    bin_dir = Path(lines[-1])
    for name in ("kube-apiserver", "etcd"):
        if not (bin_dir / name).is_file():
            raise RealK8sError(f"{BUILD_SCRIPT} reported {bin_dir}, which lacks {name}")
    return bin_dir


@contextlib.contextmanager
def real_control_plane(workdir: Path) -> Iterator[ControlPlane]:
    """Start etcd and kube-apiserver under `workdir`, yield once /readyz is ok and CRDs exist."""
    bin_dir = ensure_binaries()
    workdir.mkdir(parents=True, exist_ok=True)
    pki = _make_pki(workdir / "pki")
    token = secrets.token_hex(16)
    tokens_file = workdir / "tokens.csv"
    tokens_file.write_text(f'{token},kq-admin,kq-admin,"system:masters"\n')
    tokens_file.chmod(0o600)

    with contextlib.ExitStack() as stack:
        for attempt in range(1, START_ATTEMPTS + 1):
            attempt_stack = contextlib.ExitStack()
            try:
                server = _start(bin_dir, workdir, pki, tokens_file, token, attempt_stack)
            except _PortTaken:
                attempt_stack.close()
                if attempt == START_ATTEMPTS:
                    raise RealK8sError(f"no free ports after {attempt} attempts") from None
                continue
            except BaseException:
                attempt_stack.close()
                raise
            stack.enter_context(attempt_stack)
            break
        plane = ControlPlane(
            kubeconfig=_write_kubeconfig(workdir / "kubeconfig", server, pki.ca_cert, token),
            server=server,
            token=token,
            ca_file=pki.ca_cert,
        )
        conversion = stack.enter_context(conversion_webhook(workdir / "conversion-pki"))
        _apply_crds(plane, conversion=conversion)
        yield plane


# --- certificates -------------------------------------------------------------------------

FRONT_PROXY_NAME = "front-proxy-client"


@dataclass(frozen=True)
class _Pki:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path
    front_proxy_ca: Path
    front_proxy_cert: Path
    front_proxy_key: Path


def _openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RealK8sError(f"openssl {' '.join(args)} failed:\n{result.stderr}")


def _make_pki(directory: Path) -> _Pki:
    """A CA, a serving certificate for 127.0.0.1/localhost and a service-account signing key."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = directory / "ca.key", directory / "ca.crt"
    key, cert = directory / "apiserver.key", directory / "apiserver.crt"
    sa_key, sa_pub = directory / "service-account.key", directory / "service-account.pub"
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(ca_cert),
             "-days", "7", "-subj", "/CN=kq-realk8s-ca")  # fmt: skip
    sans = "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc"
    _openssl("req", "-x509", *ec, "-keyout", str(key), "-out", str(cert),
             "-CA", str(ca_cert), "-CAkey", str(ca_key), "-days", "7",
             "-subj", "/CN=kube-apiserver", "-addext", f"subjectAltName={sans}",
             "-addext", "extendedKeyUsage=serverAuth")  # fmt: skip
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-out", str(sa_key))  # fmt: skip
    _openssl("pkey", "-in", str(sa_key), "-pubout", "-out", str(sa_pub))
    # The aggregator's client certificate, from a CA of its own: aggregated API servers (kq
    # run's visibility API) trust it to name the user it forwards for.
    fp_ca_key, fp_ca = directory / "front-proxy-ca.key", directory / "front-proxy-ca.crt"
    fp_key, fp_cert = directory / "front-proxy-client.key", directory / "front-proxy-client.crt"
    _openssl("req", "-x509", *ec, "-keyout", str(fp_ca_key), "-out", str(fp_ca),
             "-days", "7", "-subj", "/CN=kq-realk8s-front-proxy-ca")  # fmt: skip
    _openssl("req", "-x509", *ec, "-keyout", str(fp_key), "-out", str(fp_cert),
             "-CA", str(fp_ca), "-CAkey", str(fp_ca_key), "-days", "7",
             "-subj", f"/CN={FRONT_PROXY_NAME}",
             "-addext", "extendedKeyUsage=clientAuth")  # fmt: skip
    return _Pki(ca_cert, cert, key, sa_key, sa_pub, fp_ca, fp_cert, fp_key)


# --- processes ----------------------------------------------------------------------------


class _PortTaken(Exception):
    pass


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _die_with_parent() -> None:
    """Runs in the child: the kernel SIGKILLs it when the test process dies, however it dies."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass(frozen=True)
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def check_alive(self, *others: _Process) -> None:
        code = self.popen.poll()
        if code is None:
            return
        text = self.log.read_text(errors="replace")
        if "address already in use" in text:
            raise _PortTaken
        raise RealK8sError(f"{self.name} exited with code {code}\n{_logs(self, *others)}")


def _spawn(name: str, argv: Sequence[str], log_path: Path, stack: contextlib.ExitStack) -> _Process:
    log: TextIO = stack.enter_context(log_path.open("w"))
    popen = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=_die_with_parent,
    )
    process = _Process(name, popen, log_path)
    stack.callback(_stop, popen)
    return process


def _stop(popen: subprocess.Popen[bytes]) -> None:
    if popen.poll() is not None:
        return
    popen.send_signal(signal.SIGTERM)
    try:
        popen.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait()


def _start(
    bin_dir: Path,
    workdir: Path,
    pki: _Pki,
    tokens_file: Path,
    token: str,
    stack: contextlib.ExitStack,
) -> str:
    etcd_port, peer_port, apiserver_port = _free_ports(3)
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    peer_url = f"http://127.0.0.1:{peer_port}"
    data_dir = workdir / "etcd-data"
    if data_dir.exists():  # a previous attempt's member id would not match the new peer URL
        subprocess.run(["rm", "-rf", str(data_dir)], check=True)
    etcd = _spawn(
        "etcd",
        [
            str(bin_dir / "etcd"),
            "--name=kq",
            f"--data-dir={data_dir}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=kq={peer_url}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync",  # throw-away data: durability buys nothing, fsyncs cost time
            "--log-level=warn",
        ],
        workdir / "etcd.log",
        stack,
    )
    _wait_for(lambda: _http_ok(f"{etcd_url}/health", '"health":"true"'), etcd)

    server = f"https://127.0.0.1:{apiserver_port}"
    apiserver = _spawn(
        "kube-apiserver",
        [
            str(bin_dir / "kube-apiserver"),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            f"--secure-port={apiserver_port}",
            "--advertise-address=127.0.0.1",
            # The kubernetes Service may not point at a loopback address; nothing needs it here.
            "--endpoint-reconciler-type=none",
            f"--cert-dir={workdir / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--token-auth-file={tokens_file}",
            "--authorization-mode=RBAC",
            "--anonymous-auth=false",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki.service_account_pub}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            # No controller-manager creates the `default` ServiceAccount Pods would need.
            "--disable-admission-plugins=ServiceAccount",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            # API aggregation (APIServices), as a kubeadm cluster has it.
            f"--requestheader-client-ca-file={pki.front_proxy_ca}",
            f"--requestheader-allowed-names={FRONT_PROXY_NAME}",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki.front_proxy_cert}",
            f"--proxy-client-key-file={pki.front_proxy_key}",
        ],
        workdir / "kube-apiserver.log",
        stack,
    )
    context = _ssl_context(pki.ca_cert)

    def ready() -> bool:
        etcd.check_alive(apiserver)
        return _http_ok(f"{server}/readyz", "ok", token=token, context=context)

    _wait_for(ready, apiserver, etcd)
    return server


def _wait_for(condition: Callable[[], bool], process: _Process, *others: _Process) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    delay = 0.05
    while time.monotonic() < deadline:
        process.check_alive(*others)
        if condition():
            return
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)
    raise RealK8sError(
        f"{process.name} not ready after {READY_TIMEOUT_S:.0f}s\n{_logs(process, *others)}"
    )


# --- HTTP ---------------------------------------------------------------------------------


def _ssl_context(ca_file: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_file))


def _request(
    url: str,
    *,
    method: str = "GET",
    body: bytes | None = None,
    content_type: str | None = None,
    token: str | None = None,
    context: ssl.SSLContext | None = None,
    timeout: float = 10,
) -> tuple[int, bytes]:
    headers = {"Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if content_type is not None:
        headers["Content-Type"] = content_type
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            status: int = response.status
            return status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _http_ok(
    url: str, expected: str, *, token: str | None = None, context: ssl.SSLContext | None = None
) -> bool:
    try:
        status, body = _request(url, token=token, context=context, timeout=2)
    except (OSError, ssl.SSLError):
        return False
    return status == 200 and expected in body.decode(errors="replace")


# --- kubeconfig and CRDs ------------------------------------------------------------------


def _write_kubeconfig(path: Path, server: str, ca_file: Path, token: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kq-realk8s",
                "cluster": {"server": server, "certificate-authority": str(ca_file)},
            }
        ],
        "users": [{"name": "kq-admin", "user": {"token": token}}],
        "contexts": [
            {"name": "kq-realk8s", "context": {"cluster": "kq-realk8s", "user": "kq-admin"}}
        ],
        "current-context": "kq-realk8s",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def _crd_manifests(directory: Path) -> list[dict[str, Any]]:
    manifests: list[dict[str, Any]] = []
    if not directory.is_dir():
        return manifests
    files = sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
    for file in files:
        for document in yaml.safe_load_all(file.read_text()):
            if not document:
                continue
            items = document.get("items", []) if document.get("kind") == "List" else [document]
            for item in items:
                if item.get("kind") != "CustomResourceDefinition":
                    raise RealK8sError(f"{file}: expected only CustomResourceDefinitions")
                manifests.append(item)
    return manifests


def _apply_crds(
    plane: ControlPlane, directory: Path = CRDS_DIR, conversion: dict[str, Any] | None = None
) -> None:
    """Server-side apply each CRD under `directory` (if any), then wait until Established.
    With `conversion`, the CRDs whose versions differ call that webhook, as deploy/ sets up."""
    manifests = _crd_manifests(directory)
    if conversion is not None:
        manifests = [with_conversion(m, conversion) for m in manifests]
    if not manifests:
        return
    context = _ssl_context(plane.ca_file)
    base = f"{plane.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    names = []
    for manifest in manifests:
        name = manifest["metadata"]["name"]
        status, body = _request(
            f"{base}/{name}?fieldManager=kq-realk8s&force=true",
            method="PATCH",
            body=json.dumps(manifest).encode(),
            content_type="application/apply-patch+yaml",
            token=plane.token,
            context=context,
            timeout=30,
        )
        if status not in (200, 201):
            raise RealK8sError(f"applying CRD {name} failed ({status}): {body.decode()[:2000]}")
        names.append(name)

    pending = set(names)

    def established() -> bool:
        for name in sorted(pending):
            status, body = _request(f"{base}/{name}", token=plane.token, context=context)
            # A CRD just created may carry "conditions": null.
            conditions = (json.loads(body).get("status") or {}).get("conditions") or []
            if status == 200 and any(
                c.get("type") == "Established" and c.get("status") == "True" for c in conditions
            ):
                pending.discard(name)
        return not pending

    wait_until(established, "every CRD Established", within=READY_TIMEOUT_S)


# --- diagnostics --------------------------------------------------------------------------


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _logs(*processes: _Process) -> str:
    parts = []
    for process in processes:
        try:
            text = process.log.read_text(errors="replace")
        except OSError as error:
            text = f"(unreadable: {error})"
        parts.append(f"--- last lines of {process.log} ---\n{_tail(text, 40)}")
    return "\n".join(parts)
