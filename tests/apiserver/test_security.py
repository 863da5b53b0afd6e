"""Optional TLS and bearer-token authentication of the embedded server."""

from __future__ import annotations

import json
import ssl
import stat
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.harness import embedded_apiserver


def test_tls_and_token(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if request.config.getoption("--backend") == "real":
        pytest.skip("starts its own embedded server with --token")
    args = ["--no-builtin-crds", "--token", "s3cret"]
    with embedded_apiserver(tmp_path / "server", args) as cluster:
        assert cluster.server.startswith("https://")
        result = cluster.kubectl("get", "namespaces", cache_dir=tmp_path / "cache")
        assert result.returncode == 0, result.stderr
        assert "default" in result.stdout
        context = ssl.create_default_context(cafile=str(tmp_path / "server" / "tls.crt"))
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"{cluster.server}/api/v1/namespaces", context=context)
        assert info.value.code == 401


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _status(url: str, ca: Path, token: str | None = None) -> tuple[int, dict[str, object]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    context = ssl.create_default_context(cafile=str(ca))
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_secure_by_default(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if request.config.getoption("--backend") == "real":
        pytest.skip("starts its own embedded server with the defaults")
    data = tmp_path / "server"
    with embedded_apiserver(data, ["--no-builtin-crds"]) as cluster:
        token = yaml.safe_load(cluster.kubeconfig.read_text())["users"][0]["user"]["token"]
        ca = data / "tls.crt"
        assert cluster.server.startswith("https://127.0.0.1:")  # loopback, and kubectl sends
        # a bearer token over HTTPS only
        assert len(token) >= 32
        assert _status(f"{cluster.server}/api/v1/namespaces", ca)[0] == 401
        assert _status(f"{cluster.server}/api/v1/namespaces", ca, token)[0] == 200
        result = cluster.kubectl("get", "namespaces", cache_dir=tmp_path / "cache")
        assert result.returncode == 0, result.stderr
        # The test hooks are off: as absent as any unknown path.
        for hook in ("faults", "compact", "drop-watches"):
            code, body = _status(f"{cluster.server}/kq/{hook}", ca, token)
            assert (code, body["reason"]) == (404, "NotFound")
        assert _mode(data) == 0o700
        for name in ("kubeconfig", "token", "state.db", "tls.key"):
            assert _mode(data / name) == 0o600, name
        for extra in data.glob("state.db-*"):
            assert _mode(extra) == 0o600, extra.name
    with embedded_apiserver(data, ["--no-builtin-crds"]) as again:
        # A restart keeps the token, so clients holding the kubeconfig keep working.
        assert _status(f"{again.server}/api/v1/namespaces", ca, token)[0] == 200


def test_fault_hooks_need_the_flag(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if request.config.getoption("--backend") == "real":
        pytest.skip("starts its own embedded server")
    args = ["--no-builtin-crds", "--token", "t0ken", "--enable-fault-injection"]
    with embedded_apiserver(tmp_path / "server", args) as cluster:
        code, body = _status(
            f"{cluster.server}/kq/faults", tmp_path / "server" / "tls.crt", "t0ken"
        )
        assert code == 200
        assert body["errorRate"] == 0.0
