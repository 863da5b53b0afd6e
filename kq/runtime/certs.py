"""Self-signed serving certificates for the webhook server, renewed before they expire.

A CA and a serving certificate signed by it live in a Secret shared by every replica and are
written to the cert directory as ``ca.crt``, ``tls.crt`` and ``tls.key`` (the names
controller-runtime and cert-controller use). Files are moved into place one by one with
``os.replace`` so a reader never sees half a file. Generation uses the ``openssl`` command,
since kq does not depend on a crypto library.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kq.runtime.client import KubeClient, retry_on_conflict
from kq.runtime.errors import ApiError
from kq.runtime.resources import (
    CUSTOM_RESOURCE_DEFINITIONS,
    MUTATING_WEBHOOKS,
    SECRETS,
    VALIDATING_WEBHOOKS,
    Resource,
)

CA_DAYS = 3650
SERVING_DAYS = 365
# Renew 90 days ahead, cert-controller's look-ahead, so a missed check does not cause expiry.
RENEW_BEFORE_SECONDS = 90 * 24 * 3600
FILES = ("ca.crt", "tls.crt", "tls.key")


class CertificateError(RuntimeError):
    """openssl failed; the message carries its output."""


def _openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise CertificateError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def needs_renewal(cert_dir: Path, within: float = RENEW_BEFORE_SECONDS) -> bool:
    """True when a file is missing or the serving certificate expires within ``within`` s."""
    if not all((cert_dir / name).is_file() for name in FILES):
        return True
    check = ["openssl", "x509", "-checkend", str(int(within)), "-noout"]
    result = subprocess.run([*check, "-in", str(cert_dir / "tls.crt")], capture_output=True)
    return result.returncode != 0


def generate(cert_dir: Path, dns_names: Sequence[str], days: int = SERVING_DAYS) -> None:
    """Write a new CA and a serving certificate for ``dns_names`` (and 127.0.0.1)."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cert_dir) as scratch:
        work = Path(scratch)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl(
            "req",
            "-x509",
            *ec,
            "-keyout",
            str(work / "ca.key"),
            "-out",
            str(work / "ca.crt"),
            "-days",
            str(CA_DAYS),
            "-subj",
            "/CN=kq-webhook-ca",
        )
        _openssl(
            "req",
            *ec,
            "-keyout",
            str(work / "tls.key"),
            "-out",
            str(work / "tls.csr"),
            "-subj",
            f"/CN={dns_names[0]}",
        )
        names = ",".join([*(f"DNS:{n}" for n in dns_names), "IP:127.0.0.1"])
        (work / "ext.cnf").write_text(
            f"subjectAltName={names}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            str(work / "tls.csr"),
            "-CA",
            str(work / "ca.crt"),
            "-CAkey",
            str(work / "ca.key"),
            "-CAcreateserial",
            "-out",
            str(work / "tls.crt"),
            "-days",
            str(days),
            "-extfile",
            str(work / "ext.cnf"),
        )
        os.chmod(work / "tls.key", 0o600)
        _install(cert_dir, {name: (work / name).read_bytes() for name in FILES})


def _install(cert_dir: Path, files: dict[str, bytes]) -> None:
    cert_dir.mkdir(parents=True, exist_ok=True)
    # The key first: a reader pairing a new key with the old certificate fails loudly and
    # retries on the next reload, while the reverse order could serve a mismatched pair.
    for name in ("tls.key", "tls.crt", "ca.crt"):
        if (cert_dir / name).is_file() and (cert_dir / name).read_bytes() == files[name]:
            continue
        staged = cert_dir / f".{name}.new"
        staged.write_bytes(files[name])
        os.chmod(staged, 0o600)
        os.replace(staged, cert_dir / name)


def _secret_files(secret: dict[str, object] | None) -> dict[str, bytes] | None:
    data = (secret or {}).get("data")
    if not isinstance(data, dict) or not all(name in data for name in FILES):
        return None
    return {name: base64.b64decode(data[name]) for name in FILES}


async def provision_from_secret(
    client: KubeClient, namespace: str, name: str, cert_dir: Path, dns_names: Sequence[str]
) -> None:
    """Share one CA and serving certificate between replicas through a Secret.

    Every replica installs the Secret's files; whichever finds them missing or due for renewal
    generates new ones and writes the Secret with a resourceVersion precondition, so when two
    race, one wins and the other installs the winner's files.
    """
    for _ in range(3):
        try:
            secret: dict[str, object] | None = await client.get(SECRETS, name, namespace)
        except ApiError as exc:
            if not exc.not_found:
                raise
            secret = None
        files = _secret_files(secret)
        if files is not None:
            await asyncio.to_thread(_install, cert_dir, files)
            if not await asyncio.to_thread(needs_renewal, cert_dir):
                return
        await asyncio.to_thread(generate, cert_dir, dns_names)
        data = {n: base64.b64encode((cert_dir / n).read_bytes()).decode() for n in FILES}
        body: dict[str, object] = {
            "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque",
            "data": data,
        }
        try:
            if secret is None:
                await client.create(SECRETS, body)
            else:
                body["metadata"] = secret["metadata"]
                await client.replace(SECRETS, body)
            return
        except ApiError as exc:
            if not exc.conflict:
                raise
            # Another replica wrote first: loop to install its certificate instead.
    raise CertificateError(f"secret {namespace}/{name}: could not agree on a certificate")


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names a Service is reached by from the API server."""
    return [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


async def inject_ca_bundle(
    client: KubeClient, ca_pem: bytes, configurations: Sequence[str]
) -> None:
    """Point every webhook of the named configurations at our CA, as cert-controller does.

    Each name is looked up as a validating and as a mutating configuration; a missing one is
    skipped, since an install may ship only one kind.
    """
    bundle = base64.b64encode(ca_pem).decode()
    for resource in (VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS):
        for name in configurations:

            async def update(resource: Resource = resource, name: str = name) -> None:
                current = await client.get(resource, name)
                hooks = current.get("webhooks") or []
                if all(h.get("clientConfig", {}).get("caBundle") == bundle for h in hooks):
                    return
                for hook in hooks:
                    hook.setdefault("clientConfig", {})["caBundle"] = bundle
                await client.replace(resource, current)

            try:
                await retry_on_conflict(update)
            except ApiError as exc:
                if not exc.not_found:
                    raise


async def inject_conversion_ca_bundle(
    client: KubeClient, ca_pem: bytes, crds: Sequence[str], port: int
) -> None:
    """Point the conversion webhook of the named CRDs at our CA.

    Only a CRD whose conversion strategy is Webhook is touched: under strategy None the server
    refuses a webhook stanza, and a CRD left at None was chosen not to call kq. A webhook named
    by URL is touched only on our webhook ``port``: another process's (a test plane's, another
    kq dev's) keeps its own CA. A missing CRD is skipped. Every replica holds the same CA
    (the shared Secret), so whichever writes, the outcome is the same; an unchanged bundle is
    not written again.
    """
    bundle = base64.b64encode(ca_pem).decode()
    for name in crds:

        async def update(name: str = name) -> None:
            current = await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
            conversion = current.get("spec", {}).get("conversion") or {}
            if conversion.get("strategy") != "Webhook":
                return
            webhook = conversion.get("webhook") or {}
            config = webhook.get("clientConfig") or {}
            if config.get("caBundle") == bundle or not _calls_port(config, port):
                return
            conversion["webhook"] = {**webhook, "clientConfig": {**config, "caBundle": bundle}}
            await client.replace(CUSTOM_RESOURCE_DEFINITIONS, current)

        try:
            await retry_on_conflict(update)
        except ApiError as exc:
            if not exc.not_found:
                raise


def _calls_port(client_config: dict[str, Any], port: int) -> bool:
    """Whether a webhook's clientConfig may name us: a Service always may (kq run's in a
    cluster), a URL only on ``port``."""
    url = client_config.get("url")
    if not isinstance(url, str):
        return True
    try:
        return urlsplit(url).port == port
    except ValueError:
        return False
