"""Optional TLS and bearer-token authentication of the embedded server."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.harness import embedded_apiserver


def test_tls_and_token(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if request.config.getoption("--backend") == "real":
        pytest.skip("starts its own embedded server with --tls and --token")
    args = ["--no-builtin-crds", "--tls", "--token", "s3cret"]
    with embedded_apiserver(tmp_path / "server", args) as cluster:
        assert cluster.server.startswith("https://")
        result = cluster.kubectl("get", "namespaces", cache_dir=tmp_path / "cache")
        assert result.returncode == 0, result.stderr
        assert "default" in result.stdout
        context = ssl.create_default_context(cafile=str(tmp_path / "server" / "tls.crt"))
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"{cluster.server}/api/v1/namespaces", context=context)
        assert info.value.code == 401
