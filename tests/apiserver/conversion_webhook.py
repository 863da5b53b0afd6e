"""kq's conversion webhook handler served over HTTPS from a thread, for a real kube-apiserver
to call; and the CRD patches that point Kueue's kinds at it (and back)."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kq.webhooks.conversion import CONVERT, review
from tests.harness import Cluster


def certificate(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "convert.crt", directory / "convert.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


DENY_COHORT = "/deny-cohort"
FORBIDDEN_COHORT = "forbidden"


def _deny_cohort(admission_review: dict[str, Any]) -> dict[str, Any]:
    """A validating webhook that reads v1beta1's field name: ClusterQueues in the cohort
    ``forbidden`` are refused, and the refusal says which version the webhook was sent."""
    request = admission_review["request"]
    cohort = ((request.get("object") or {}).get("spec") or {}).get("cohort")
    response: dict[str, Any] = {"uid": request["uid"], "allowed": cohort != FORBIDDEN_COHORT}
    if cohort == FORBIDDEN_COHORT:
        sent, asked = request["kind"]["version"], request["requestKind"]["version"]
        response["status"] = {"code": 403, "message": f"sent {sent}, asked in {asked}"}
    return {**admission_review, "response": response}


class _Handler(BaseHTTPRequestHandler):
    calls = 0

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        if path not in (CONVERT, DENY_COHORT):
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answer = json.dumps(review(body) if path == CONVERT else _deny_cohort(body)).encode()
        type(self).calls += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: pytest shows failures, not every request."""


@contextmanager
def serving(directory: Path) -> Iterator[tuple[str, str, type[_Handler]]]:
    """The conversion webhook's URL and CA bundle while the block runs, and the handler class
    (its ``calls`` counts the reviews answered). The same server answers ``DENY_COHORT``."""
    cert, key = certificate(directory)
    handler = type("Handler", (_Handler,), {"calls": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"https://127.0.0.1:{server.server_address[1]}{CONVERT}"
        yield url, base64.b64encode(cert.read_bytes()).decode(), handler
    finally:
        server.shutdown()
        server.server_close()


def webhook_conversion(url: str, ca_bundle: str) -> dict[str, Any]:
    return {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": url, "caBundle": ca_bundle},
        },
    }


NO_CONVERSION: dict[str, Any] = {"strategy": "None", "webhook": None}


def conversions(cluster: Cluster, cache: Path, crds: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each CRD's ``spec.conversion`` as a merge patch that puts it back: the session's own
    (the real test plane's CRDs call a conversion webhook, since they store v1beta2)."""
    saved = {}
    for crd in crds:
        done = cluster.kubectl("get", "crd", crd, "-o", "json", cache_dir=cache)
        assert done.returncode == 0, done.stderr
        conversion = json.loads(done.stdout)["spec"].get("conversion") or {}
        saved[crd] = conversion if conversion.get("strategy") == "Webhook" else NO_CONVERSION
    return saved
