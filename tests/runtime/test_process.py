"""The process edges: configuration errors fail fast, probes, metrics, tracing set-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import ClientSession

from kq.cli import main
from kq.config import Health
from kq.observability.metrics import exponential_buckets
from kq.observability.tracing import TracingConfigError, configure_tracing
from kq.runtime import health, metrics_server


def test_kq_run_with_a_bad_config_fails_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 12s\n")
    assert main(["run", "--config", str(bad), "--kubeconfig", str(tmp_path / "none")]) == 2
    assert (
        "leaderElection.renewDeadline: must be less than leaseDuration" in capsys.readouterr().err
    )


async def test_probes() -> None:
    waiting = ["Workload"]
    app = health.build_app(Health(readiness_endpoint_name="ready"), lambda: waiting)
    runner = await health.serve(app, ["127.0.0.1:0"])
    port = runner.addresses[0][1]
    base = f"http://127.0.0.1:{port}"
    try:
        async with ClientSession() as session:
            async with session.get(f"{base}/healthz") as live:
                assert live.status == 200
            async with session.get(f"{base}/ready") as ready:
                assert ready.status == 503
                assert "Workload" in await ready.text()
            waiting.clear()
            async with session.get(f"{base}/ready") as ready:
                assert ready.status == 200
            # Metrics have a server of their own: the probes' port never shows them.
            async with session.get(f"{base}/metrics") as scraped:
                assert scraped.status == 404
    finally:
        await runner.cleanup()


async def test_metrics_without_review_on_loopback() -> None:
    runner = await health.serve(metrics_server.build_app(None), ["127.0.0.1:0"])
    port = runner.addresses[0][1]
    try:
        async with (
            ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/metrics") as scraped,
        ):
            text = await scraped.text()
    finally:
        await runner.cleanup()
    assert "kueue_build_info{" in text
    assert "# TYPE kueue_admission_attempt_duration_seconds histogram" in text
    assert "_created" not in text


def test_tracing_follows_the_otel_variables() -> None:
    assert configure_tracing({}) is None
    assert configure_tracing({"OTEL_TRACES_EXPORTER": "none"}) is None
    assert (
        configure_tracing({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}) is None
    )
    with pytest.raises(TracingConfigError, match="zipkin"):
        configure_tracing({"OTEL_TRACES_EXPORTER": "zipkin"})
    provider = configure_tracing({"OTEL_TRACES_EXPORTER": "console"})
    assert provider is not None
    try:
        assert provider.resource.attributes["service.name"] == "kq"
    finally:
        provider.shutdown()


def test_kueue_bucket_layout() -> None:
    assert exponential_buckets(4) == (1.0, 2.5, 5.0, 10.0)
